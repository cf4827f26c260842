package dev.samsa.compat;

import org.apache.kafka.clients.admin.Admin;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.extension.ExtendWith;

/** Every test class: an Admin client for the class, and the skip file applied (Env.SkipList). */
@ExtendWith(Env.SkipList.class)
abstract class SuiteBase {
    static Admin admin;

    @BeforeAll
    static void openAdmin() {
        admin = Env.admin();
    }

    @AfterAll
    static void closeAdmin() {
        admin.close();
    }
}
