//! Kafka wire framing for Samsa.
