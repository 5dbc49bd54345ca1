package io.pyrmq.compat.scenarios;

/**
 * Scenario parameters come from system properties (-Dnamesrv=..., -Dtopic=..., -Dcount=...),
 * set by tests/support/java.py run_junit. A missing required one fails the case.
 */
final class Props {
    static String namesrv() {
        String v = System.getProperty("namesrv");
        if (v == null || v.isEmpty()) {
            throw new IllegalStateException("system property 'namesrv' (host:port) is required");
        }
        return v;
    }

    static String str(String key, String dflt) {
        String v = System.getProperty(key);
        return v == null || v.isEmpty() ? dflt : v;
    }

    static int integer(String key, int dflt) {
        return Integer.parseInt(str(key, Integer.toString(dflt)));
    }

    /** A topic name unique to this run unless -Dtopic is given. */
    static String topic(String prefix) {
        return str("topic", prefix + "_" + Long.toHexString(System.nanoTime()));
    }

    private Props() {
    }
}
