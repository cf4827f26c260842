package org.apache.kafka.common.utils;

/**
 * Shim for connect-file and connect-mirror 4.3.1 on the 4.4.0 client (see ../../../../../../../pom.xml):
 * 4.4.0 moved this class to org.apache.kafka.common.utils.internals, and the 4.3.1 connectors call
 * {@code AppInfoParser.getVersion()} (their {@code version()}) under the old name. The one method they
 * use, delegating to the class that replaced it.
 */
public final class AppInfoParser {
    private AppInfoParser() {
    }

    public static String getVersion() {
        return org.apache.kafka.common.utils.internals.AppInfoParser.getVersion();
    }
}
