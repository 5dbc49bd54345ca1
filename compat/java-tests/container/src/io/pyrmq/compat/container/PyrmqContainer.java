package io.pyrmq.compat.container;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.time.Duration;
import java.util.concurrent.ThreadLocalRandom;
import org.testcontainers.containers.GenericContainer;
import org.testcontainers.containers.wait.strategy.Wait;
import org.testcontainers.utility.DockerImageName;

/**
 * pyrmq's image running {@code pyrmq dev} (NameServer + Broker) under Testcontainers for Java.
 *
 * <p>A broker puts its own address into topic routes, so clients must reach it at exactly that
 * address: the container uses host networking and free loopback ports picked here (the broker's
 * VIP port, listenPort - 2, must be free as well). Image: -Dimage (default pyrmq:local).
 */
public final class PyrmqContainer extends GenericContainer<PyrmqContainer> {
    private final int namesrvPort;
    private final int brokerPort;

    public PyrmqContainer(String image) {
        super(DockerImageName.parse(image));
        this.namesrvPort = freePort(false);
        this.brokerPort = freePort(true);
        withNetworkMode("host");
        withCommand("dev", "--host", "127.0.0.1", "--namesrv-port", Integer.toString(namesrvPort),
            "--broker-port", Integer.toString(brokerPort));
        waitingFor(Wait.forLogMessage(".*pyrmq dev ready.*\\n", 1).withStartupTimeout(Duration.ofSeconds(60)));
    }

    public static PyrmqContainer fromSystemProperty() {
        return new PyrmqContainer(System.getProperty("image", "pyrmq:local"));
    }

    public String getNamesrvAddr() {
        return "127.0.0.1:" + namesrvPort;
    }

    public String getBrokerAddr() {
        return "127.0.0.1:" + brokerPort;
    }

    private static boolean bindable(int port) {
        try (ServerSocket s = new ServerSocket()) {
            s.setReuseAddress(true);
            s.bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), port));
            return true;
        } catch (IOException e) {
            return false;
        }
    }

    private static int freePort(boolean withVip) {
        for (int i = 0; i < 200; i++) {
            int port = ThreadLocalRandom.current().nextInt(20000, 60000);
            if (bindable(port) && (!withVip || bindable(port - 2))) {
                return port;
            }
        }
        throw new IllegalStateException("no free loopback port found");
    }
}
