//! One configuration key's definition ([`ConfigDef`]: its type, default, whether and how it
//! may change while the broker runs) and the constructors the tables of the areas use.

/// The type of a configuration value, as DescribeConfigs reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConfigType {
    Boolean,
    String,
    Int,
    Short,
    Long,
    Double,
    List,
    Class,
    Password,
}

impl ConfigType {
    /// The `config_type` code of DescribeConfigs v3+ (Kafka's `ConfigType` ordinal + 1).
    pub fn describe_code(self) -> i8 {
        match self {
            ConfigType::Boolean => 1,
            ConfigType::String => 2,
            ConfigType::Int => 3,
            ConfigType::Short => 4,
            ConfigType::Long => 5,
            ConfigType::Double => 6,
            ConfigType::List => 7,
            ConfigType::Class => 8,
            ConfigType::Password => 9,
        }
    }
}

/// How a key takes effect.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Used by Samsa.
    Used,
    /// Accepted so that a Kafka `server.properties` starts unchanged; has no effect on a
    /// single Samsa node (the value is still validated and reported by DescribeConfigs).
    Accepted,
    /// Listed with Kafka's default so that tools see Kafka's catalogue, but refused at start and
    /// in AlterConfigs when set to anything else: Samsa does not do what the key asks (validate
    /// JWTs against a JWKS endpoint, load a Java policy class, tier segments to remote storage,
    /// ...), and accepting it without doing it would mislead about security or durability.
    Unsupported,
}

/// Whether and where a broker key may change while the broker runs (KIP-226's dynamic broker
/// configs; Kafka's "update mode" in its documentation, `DynamicBrokerConfig` in its code).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// Read at start only (properties file, environment, flags): AlterConfigs refuses it with
    /// "Cannot update these configs dynamically".
    ReadOnly,
    /// Dynamic for one broker (resource name = its node id), never as the cluster-wide default
    /// (Kafka's `PerBrokerConfigs`: listener, SSL and SASL settings).
    PerBroker,
    /// Dynamic for one broker or as the cluster-wide default (resource name "").
    ClusterWide,
    /// Dynamic only with a listener prefix, `listener.name.<listener>.<key>` (Kafka's
    /// `DynamicSecurityConfigs`: keystores and truststores belong to a listener).
    PerListener,
}

/// One known key.
#[derive(Debug, Clone, Copy)]
pub struct ConfigDef {
    pub name: &'static str,
    pub kind: ConfigType,
    /// `None`: no default (null).
    pub default: Option<&'static str>,
    pub effect: Effect,
    pub update: Update,
    /// Left out of DescribeConfigs unless some level sets it: Kafka's internal keys and the
    /// dynamic-only keys that Kafka's broker catalogue does not list.
    pub hidden: bool,
    pub doc: &'static str,
}

impl ConfigDef {
    /// Not listed by DescribeConfigs until set.
    pub(super) const fn hidden(self) -> ConfigDef {
        ConfigDef {
            hidden: true,
            ..self
        }
    }

    /// Why `value` is refused for this key, if it is: an [`Effect::Unsupported`] key may only
    /// keep its default (or, without one, be left empty).
    pub fn unsupported_value(&self, value: &str) -> Option<std::string::String> {
        if self.effect != Effect::Unsupported {
            return None;
        }
        let value = value.trim();
        let default = self.default.unwrap_or("");
        let same = if self.kind == ConfigType::Boolean {
            value.eq_ignore_ascii_case(default)
        } else {
            value == default
        };
        (!same).then(|| {
            format!(
                "{} is not supported by Samsa (only its default, {}, is accepted): {}",
                self.name,
                if default.is_empty() { "unset" } else { default },
                self.doc
            )
        })
    }

    /// Dynamic per broker and as the cluster-wide default.
    pub(super) const fn cluster_wide(self) -> ConfigDef {
        ConfigDef {
            update: Update::ClusterWide,
            ..self
        }
    }

    /// Dynamic per broker only.
    pub(super) const fn per_broker(self) -> ConfigDef {
        ConfigDef {
            update: Update::PerBroker,
            ..self
        }
    }

    /// Dynamic only as `listener.name.<listener>.<key>`.
    pub(super) const fn per_listener(self) -> ConfigDef {
        ConfigDef {
            update: Update::PerListener,
            ..self
        }
    }

    /// Whether AlterConfigs may change the key at all (DescribeConfigs' `read_only` is the
    /// opposite).
    pub fn is_dynamic(&self) -> bool {
        self.update != Update::ReadOnly
    }
}

pub(super) const fn def(
    name: &'static str,
    kind: ConfigType,
    default: Option<&'static str>,
    doc: &'static str,
) -> ConfigDef {
    ConfigDef {
        name,
        kind,
        default,
        effect: Effect::Used,
        update: Update::ReadOnly,
        hidden: false,
        doc,
    }
}

pub(super) const fn inert(
    name: &'static str,
    kind: ConfigType,
    default: Option<&'static str>,
) -> ConfigDef {
    ConfigDef {
        name,
        kind,
        default,
        effect: Effect::Accepted,
        update: Update::ReadOnly,
        hidden: false,
        doc: "accepted for compatibility",
    }
}

/// A Kafka key Samsa cannot honour: listed with Kafka's default, refused when set otherwise.
pub(super) const fn unsupported(
    name: &'static str,
    kind: ConfigType,
    default: Option<&'static str>,
    doc: &'static str,
) -> ConfigDef {
    ConfigDef {
        name,
        kind,
        default,
        effect: Effect::Unsupported,
        update: Update::ReadOnly,
        hidden: false,
        doc,
    }
}
