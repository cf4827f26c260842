package org.apache.kafka.common.utils;

/**
 * Shim for connect-mirror 4.3.1 on the 4.4.0 client (see ../../../../../../../pom.xml): 4.4.0 moved
 * this class to org.apache.kafka.common.utils.internals, and the 4.3.1 MirrorMaker (dedicated mode)
 * calls {@code Exit.exit(int)} and {@code Exit.addShutdownHook(String, Runnable)} under the old
 * name. Those two methods, delegating to the class that replaced it.
 */
public final class Exit {
    private Exit() {
    }

    public static void exit(int statusCode) {
        org.apache.kafka.common.utils.internals.Exit.exit(statusCode);
    }

    public static void addShutdownHook(String name, Runnable runnable) {
        org.apache.kafka.common.utils.internals.Exit.addShutdownHook(name, runnable);
    }
}
