package io.pyrmq.compat.container;

import static org.junit.jupiter.api.Assertions.assertTrue;

import io.pyrmq.compat.scenarios.QuickstartTest;
import org.junit.jupiter.api.Test;

/**
 * The official quickstart (send 1,000 / consume 1,000 with rocketmq-client 5.5.0, the shared
 * QuickstartTest) against pyrmq started by Testcontainers for Java. Properties: image, count.
 */
public class PyrmqContainerQuickstartTest {

    @Test
    public void quickstartAgainstContainer() throws Exception {
        try (PyrmqContainer pyrmq = PyrmqContainer.fromSystemProperty()) {
            pyrmq.start();
            assertTrue(pyrmq.isRunning(), "container running");
            System.out.printf("container %s: namesrv %s broker %s%n", pyrmq.getContainerId().substring(0, 12),
                pyrmq.getNamesrvAddr(), pyrmq.getBrokerAddr());
            System.setProperty("namesrv", pyrmq.getNamesrvAddr());
            new QuickstartTest().quickstart();
        }
    }
}
