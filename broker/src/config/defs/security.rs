//! Broker keys of security: the authorizer, and the TLS and SASL settings of listeners.

use super::types::ConfigType::*;
use super::types::{def, inert, unsupported, ConfigDef};

/// The authorizer and its super users.
#[rustfmt::skip]
pub(super) const AUTHORIZATION: &[ConfigDef] = &[
    // Authorization (ACLs). Any non-empty class name enables Samsa's built-in authorizer, which
    // follows Kafka's StandardAuthorizer.
    def(
        "authorizer.class.name",
        String,
        Some(""),
        "non-empty enables ACL authorization (e.g. org.apache.kafka.metadata.authorizer.StandardAuthorizer)",
    ),
    def(
        "super.users",
        String,
        None,
        "principals allowed everything, separated by ';' (User:admin;User:ops)",
    ),
    def(
        "allow.everyone.if.no.acl.found",
        Boolean,
        Some("false"),
        "allow an operation on a resource that no ACL matches",
    ),
];

/// TLS and SASL settings of listeners.
#[rustfmt::skip]
pub(super) const LISTENERS: &[ConfigDef] = &[
    // Listener security (TLS and SASL), dynamic per broker in Kafka (DynamicListenerConfig).
    // Samsa serves PLAINTEXT only for now; these are stored for the day it does more.
    unsupported(
        "principal.builder.class",
        Class,
        Some("org.apache.kafka.common.security.authenticator.DefaultKafkaPrincipalBuilder"),
        "Samsa builds principals as Kafka's default builder does and loads no other class",
    )
    .per_broker(),
    inert("ssl.protocol", String, Some("TLSv1.3")).per_broker(),
    inert("ssl.provider", String, None).per_broker(),
    def("ssl.cipher.suites", List, Some(""), "TLS cipher suites by IANA name (empty: rustls's defaults)").per_broker(),
    def("ssl.enabled.protocols", List, Some("TLSv1.2,TLSv1.3"), "TLS versions a TLS listener accepts (TLSv1.2, TLSv1.3)").per_broker(),
    inert("ssl.keymanager.algorithm", String, Some("SunX509")).per_broker(),
    inert("ssl.trustmanager.algorithm", String, Some("PKIX")).per_broker(),
    def("ssl.endpoint.identification.algorithm", String, Some("https"), "https: this node checks that the certificate of a node it connects to names the host or address it was reached at; empty: it does not").per_listener(),
    inert("ssl.secure.random.implementation", String, None).per_broker(),
    def("ssl.client.auth", String, Some("none"), "none, requested or required: client certificates on TLS listeners (mutual TLS)").per_broker(),
    inert("ssl.engine.factory.class", Class, None).per_broker(),
    def("ssl.keystore.type", String, Some("JKS"), "PEM or PKCS12 (JKS is refused: convert it to PKCS12 with keytool)").per_listener(),
    def("ssl.keystore.location", String, None, "a PEM file with the listener's private key and certificate chain, or a PKCS12 store").per_listener(),
    def("ssl.keystore.password", Password, None, "the password of a PKCS12 keystore").per_listener(),
    def("ssl.key.password", Password, None, "the private key's password (encrypted keys are refused at start)").per_listener(),
    def("ssl.keystore.key", Password, None, "the listener's private key, inline PEM").per_listener(),
    def("ssl.keystore.certificate.chain", Password, None, "the listener's certificate chain, inline PEM").per_listener(),
    def("ssl.truststore.type", String, Some("JKS"), "PEM or PKCS12").per_listener(),
    def("ssl.truststore.location", String, None, "a PEM file (or a PKCS12 store) of the CA certificates that client certificates, and the certificates of other nodes this node connects to, must chain to").per_listener(),
    def("ssl.truststore.password", Password, None, "the password of a PKCS12 truststore").per_listener(),
    def("ssl.truststore.certificates", Password, None, "the trusted CA certificates, inline PEM").per_listener(),
    def("sasl.mechanism.inter.broker.protocol", String, Some("GSSAPI"), "read at start (Kafka changes it per broker at run time): the SASL mechanism brokers authenticate to each other with on a SASL inter-broker listener: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512 or OAUTHBEARER, with the username and password of that listener's JAAS config for it"),
    def("sasl.mechanism.controller.protocol", String, Some("GSSAPI"), "the SASL mechanism nodes authenticate to controllers with on a SASL controller listener: PLAIN or OAUTHBEARER"),
    def("sasl.jaas.config", Password, None, "JAAS login module config; on a broker as listener.name.<listener>.<mechanism>.sasl.jaas.config (PLAIN's users: user_<name>=\"<password>\")").per_broker(),
    def("sasl.enabled.mechanisms", List, Some("GSSAPI"), "SASL mechanisms of SASL listeners: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512").per_broker(),
    // Read-only unprefixed, as in Kafka; a listener's override (listener.name.<l>....) is
    // dynamic per broker, as every listener-prefixed key is.
    def("sasl.server.callback.handler.class", Class, None, "on a broker as listener.name.<l>.<mechanism>.sasl.server.callback.handler.class; only Kafka's unsecured OAUTHBEARER validator (the default) is served"),
    def("ssl.principal.mapping.rules", String, Some("DEFAULT"), "rules mapping a client certificate's subject to a principal name (RULE:pattern/replacement/[LU], DEFAULT)"),
    def("security.inter.broker.protocol", String, Some("PLAINTEXT"), "the inter-broker listener's protocol when inter.broker.listener.name is not set"),
    def("connections.max.reauth.ms", Long, Some("0"), "SASL re-authentication (KIP-368): how long a session lasts before the client must re-authenticate; 0 for as long as the connection"),
    def("connection.failed.authentication.delay.ms", Int, Some("100"), "how long a failed authentication waits before its answer and the close, to slow guessing"),
    def("sasl.server.max.receive.size", Int, Some("524288"), "the largest SASL token accepted before authentication"),
    inert("sasl.kerberos.service.name", String, None).per_broker(),
    inert("sasl.kerberos.kinit.cmd", String, Some("/usr/bin/kinit")).per_broker(),
    inert("sasl.kerberos.ticket.renew.window.factor", Double, Some("0.8")).per_broker(),
    inert("sasl.kerberos.ticket.renew.jitter", Double, Some("0.05")).per_broker(),
    inert("sasl.kerberos.min.time.before.relogin", Long, Some("60000")).per_broker(),
    inert("sasl.kerberos.principal.to.local.rules", List, Some("DEFAULT")).per_broker(),
    inert("sasl.login.refresh.window.factor", Double, Some("0.8")).per_broker(),
    inert("sasl.login.refresh.window.jitter", Double, Some("0.05")).per_broker(),
    inert("sasl.login.refresh.min.period.seconds", Short, Some("60")).per_broker(),
    inert("sasl.login.refresh.buffer.seconds", Short, Some("300")).per_broker(),
];
