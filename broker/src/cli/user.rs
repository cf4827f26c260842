//! `samsa user ...`: users' SCRAM credentials (KIP-554), the user half of Kafka's
//! `kafka-configs.sh --entity-type users --alter --add-config 'SCRAM-SHA-256=[...]'`, through
//! AlterUserScramCredentials and DescribeUserScramCredentials.
//!
//! As Kafka's admin client does, the salted password (RFC 5802's `Hi(password, salt, i)`) is
//! computed here with a random salt: the password itself never leaves this process. The
//! iteration count defaults to Kafka's tool's, 4096; the broker refuses counts outside
//! 4096..=16384, and its message says which bound.

use std::io::BufRead;

use bytes::Bytes;
use clap::Subcommand;
use kafka_protocol::messages::alter_user_scram_credentials_request::{
    ScramCredentialDeletion, ScramCredentialUpsertion,
};
use kafka_protocol::messages::describe_user_scram_credentials_request::UserName;
use kafka_protocol::messages::{
    AlterUserScramCredentialsRequest, DescribeUserScramCredentialsRequest,
};
use kafka_protocol::protocol::StrBytes;
use rand::RngCore;
use samsa_cluster::controller::ScramMechanism;
use serde_json::json;

use super::client::{refused, Client, Node};
use super::global::Global;
use super::output::{emit, Table};
use crate::security::sasl::scram::hi;

/// `kafka-configs.sh`'s iteration count when none is given (`DefaultScramIterations`).
pub const DEFAULT_ITERATIONS: u32 = 4096;
/// Bytes of random salt per credential.
pub const SALT_BYTES: usize = 32;

#[derive(Debug, Subcommand)]
pub enum UserCommand {
    /// Set (add or replace) a user's SCRAM credential for one mechanism.
    ScramSet(ScramSetArgs),
    /// Delete a user's SCRAM credential for one mechanism.
    ScramDelete {
        name: String,
        #[arg(long, value_enum, ignore_case = true)]
        mechanism: Mechanism,
    },
    /// Every user with SCRAM credentials: mechanisms and iteration counts.
    List,
    /// The SCRAM credentials of the named users (every user's when none is named).
    Describe { names: Vec<String> },
}

#[derive(Debug, clap::Args)]
#[command(group(clap::ArgGroup::new("secret").required(true).args(["password", "password_stdin"])))]
pub struct ScramSetArgs {
    pub name: String,
    /// The password (visible to other users of this machine in the process list: prefer
    /// --password-stdin).
    #[arg(long)]
    pub password: Option<String>,
    /// Read the password from the first line of stdin.
    #[arg(long)]
    pub password_stdin: bool,
    #[arg(long, value_enum, ignore_case = true, default_value = "SCRAM-SHA-256")]
    pub mechanism: Mechanism,
    /// PBKDF2 iterations (the broker accepts 4096 to 16384).
    #[arg(long, default_value_t = DEFAULT_ITERATIONS,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub iterations: u32,
}

/// A SCRAM mechanism, by its SASL name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Mechanism {
    #[value(name = "SCRAM-SHA-256")]
    ScramSha256,
    #[value(name = "SCRAM-SHA-512")]
    ScramSha512,
}

impl Mechanism {
    fn scram(self) -> ScramMechanism {
        match self {
            Mechanism::ScramSha256 => ScramMechanism::Sha256,
            Mechanism::ScramSha512 => ScramMechanism::Sha512,
        }
    }
}

pub fn run(global: &Global, cmd: &UserCommand) -> anyhow::Result<()> {
    // The password is read before connecting: a prompt-less pipe is consumed either way.
    let password = match cmd {
        UserCommand::ScramSet(args) => Some(password(args)?),
        _ => None,
    };
    let mut client = global.connect()?;
    match cmd {
        UserCommand::ScramSet(args) => scram_set(
            global,
            &mut client,
            args,
            password.as_deref().unwrap_or_default(),
        ),
        UserCommand::ScramDelete { name, mechanism } => {
            scram_delete(global, &mut client, name, mechanism.scram())
        }
        UserCommand::List => describe(global, &mut client, &[]),
        UserCommand::Describe { names } => describe(global, &mut client, names),
    }
}

fn password(args: &ScramSetArgs) -> anyhow::Result<String> {
    let password = match &args.password {
        Some(p) => p.clone(),
        None => {
            let mut line = String::new();
            std::io::stdin().lock().read_line(&mut line)?;
            line.trim_end_matches(['\n', '\r']).to_string()
        }
    };
    if password.is_empty() {
        anyhow::bail!("the password is empty");
    }
    Ok(password)
}

/// An upsertion for `password` with a fresh random salt.
pub fn upsertion(
    name: &str,
    m: ScramMechanism,
    password: &str,
    iterations: u32,
) -> ScramCredentialUpsertion {
    let mut salt = vec![0u8; SALT_BYTES];
    rand::thread_rng().fill_bytes(&mut salt);
    let salted = hi(m, password.as_bytes(), &salt, iterations);
    let mut u = ScramCredentialUpsertion::default();
    u.name = StrBytes::from_string(name.to_string());
    u.mechanism = m.code();
    u.iterations = iterations as i32;
    u.salt = Bytes::from(salt);
    u.salted_password = Bytes::from(salted);
    u
}

/// Sends one alteration and checks its result for `name`.
fn alter(
    client: &mut Client,
    name: &str,
    what: &str,
    build: impl FnOnce(&mut AlterUserScramCredentialsRequest),
) -> anyhow::Result<()> {
    let (_, resp) = client.call(Node::Any, |_| {
        let mut req = AlterUserScramCredentialsRequest::default();
        build(&mut req);
        req
    })?;
    let r = resp
        .results
        .iter()
        .find(|r| r.user.as_str() == name)
        .ok_or_else(|| {
            anyhow::anyhow!("AlterUserScramCredentials answered nothing for '{name}'")
        })?;
    if r.error_code != 0 {
        return Err(refused(r.error_code, what, r.error_message.as_ref()));
    }
    Ok(())
}

fn scram_set(
    global: &Global,
    client: &mut Client,
    args: &ScramSetArgs,
    password: &str,
) -> anyhow::Result<()> {
    let (name, m) = (args.name.as_str(), args.mechanism.scram());
    let what = format!("{} credential of user '{name}'", m.name());
    let u = upsertion(name, m, password, args.iterations);
    alter(client, name, &what, |req| req.upsertions = vec![u])?;
    emit(
        global.format,
        &json!({"user": name, "mechanism": m.name(), "iterations": args.iterations, "set": true}),
        || format!("set the {what} ({} iterations)\n", args.iterations),
    );
    Ok(())
}

fn scram_delete(
    global: &Global,
    client: &mut Client,
    name: &str,
    m: ScramMechanism,
) -> anyhow::Result<()> {
    let what = format!("{} credential of user '{name}'", m.name());
    let mut d = ScramCredentialDeletion::default();
    d.name = StrBytes::from_string(name.to_string());
    d.mechanism = m.code();
    alter(client, name, &what, |req| req.deletions = vec![d])?;
    emit(
        global.format,
        &json!({"user": name, "mechanism": m.name(), "deleted": true}),
        || format!("deleted the {what}\n"),
    );
    Ok(())
}

/// The name of a mechanism code, or the code for one this client does not know.
fn mechanism_name(code: i8) -> String {
    ScramMechanism::from_code(code).map_or_else(|| format!("unknown ({code})"), |m| m.name().into())
}

fn describe(global: &Global, client: &mut Client, names: &[String]) -> anyhow::Result<()> {
    let (_, resp) = client.call(Node::Any, |_| {
        let mut req = DescribeUserScramCredentialsRequest::default();
        // Null asks for every user (an empty list would ask for none).
        req.users = (!names.is_empty()).then(|| {
            names
                .iter()
                .map(|n| {
                    let mut u = UserName::default();
                    u.name = StrBytes::from_string(n.clone());
                    u
                })
                .collect()
        });
        req
    })?;
    if resp.error_code != 0 {
        let what = "describing SCRAM credentials";
        return Err(refused(resp.error_code, what, resp.error_message.as_ref()));
    }
    let mut users = Vec::new();
    for r in &resp.results {
        let user = r.user.to_string();
        if r.error_code != 0 {
            let what = format!("SCRAM credentials of user '{user}'");
            return Err(refused(r.error_code, &what, r.error_message.as_ref()));
        }
        let mut creds: Vec<(String, i32)> = r
            .credential_infos
            .iter()
            .map(|c| (mechanism_name(c.mechanism), c.iterations))
            .collect();
        creds.sort();
        users.push((user, creds));
    }
    users.sort();
    let value = json!(users
        .iter()
        .map(|(user, creds)| json!({
            "user": user,
            "credentials": creds
                .iter()
                .map(|(m, i)| json!({"mechanism": m, "iterations": i}))
                .collect::<Vec<_>>(),
        }))
        .collect::<Vec<_>>());
    emit(global.format, &value, || {
        let mut t = Table::new(&["USER", "MECHANISM", "ITERATIONS"]);
        for (user, creds) in &users {
            for (m, i) in creds {
                t.row(vec![user.clone(), m.clone(), i.to_string()]);
            }
        }
        t.render()
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    fn parse(args: &[&str]) -> Result<super::super::Cli, clap::Error> {
        super::super::Cli::try_parse_from(std::iter::once("samsa").chain(args.iter().copied()))
    }

    #[test]
    fn scram_set_defaults_to_kafkas_mechanism_and_iterations() {
        let cli = parse(&["user", "scram-set", "alice", "--password", "pw"]).unwrap();
        let super::super::Command::User(UserCommand::ScramSet(a)) = cli.command else {
            panic!("{:?}", cli.command)
        };
        assert_eq!(a.mechanism, Mechanism::ScramSha256);
        assert_eq!(a.iterations, 4096);
        let cli = parse(&[
            "user",
            "scram-set",
            "bob",
            "--password-stdin",
            "--mechanism",
            "scram-sha-512",
            "--iterations",
            "8192",
        ])
        .unwrap();
        let super::super::Command::User(UserCommand::ScramSet(a)) = cli.command else {
            panic!()
        };
        assert_eq!(
            (a.mechanism, a.iterations, a.password_stdin),
            (Mechanism::ScramSha512, 8192, true)
        );
        // A password is required, once; a mechanism is required for a deletion.
        assert!(parse(&["user", "scram-set", "alice"]).is_err());
        assert!(parse(&[
            "user",
            "scram-set",
            "a",
            "--password",
            "p",
            "--password-stdin"
        ])
        .is_err());
        assert!(parse(&["user", "scram-delete", "alice"]).is_err());
        assert!(parse(&[
            "user",
            "scram-set",
            "a",
            "--password",
            "p",
            "--mechanism",
            "PLAIN"
        ])
        .is_err());
        assert!(super::super::is_command(&[
            "--command-config".into(),
            "f".into(),
            "user".into()
        ]));
    }

    #[test]
    fn an_upsertion_carries_a_random_salt_and_the_salted_password() {
        let a = upsertion("alice", ScramMechanism::Sha512, "pencil", 4096);
        let b = upsertion("alice", ScramMechanism::Sha512, "pencil", 4096);
        assert_eq!(a.salt.len(), SALT_BYTES);
        assert_ne!(a.salt, b.salt);
        assert_eq!((a.mechanism, a.iterations), (2, 4096));
        assert_eq!(a.salted_password.len(), 64);
        let again = hi(ScramMechanism::Sha512, b"pencil", &a.salt, 4096);
        assert_eq!(a.salted_password, again);
        assert!(!a.salted_password.windows(6).any(|w| w == b"pencil"));
    }
}
