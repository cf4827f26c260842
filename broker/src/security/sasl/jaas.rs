//! Kafka's JAAS configuration text, as `sasl.jaas.config` carries it:
//!
//! ```text
//! org.apache.kafka.common.security.plain.PlainLoginModule required
//!     username="admin" password="admin-secret" user_admin="admin-secret" user_alice="alice-secret";
//! ```
//!
//! One login module (Kafka refuses more than one in `sasl.jaas.config`): its class, its control
//! flag and its options. Values are quoted strings (a backslash escapes the next character) or
//! bare words. Parsing is strict: anything else is an error that names what was wrong, never a
//! silently smaller user list.

use std::collections::BTreeMap;

/// One login module entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoginModule {
    pub class: String,
    pub flag: String,
    pub options: BTreeMap<String, String>,
}

/// Parses `text`. Errors never quote option values (they may be passwords).
pub fn parse(text: &str) -> Result<LoginModule, String> {
    let mut p = Parser {
        s: text.as_bytes(),
        i: 0,
    };
    let class = p
        .word()
        .ok_or("sasl.jaas.config: expected a login module class")?;
    let flag = p
        .word()
        .ok_or("sasl.jaas.config: expected a control flag (required, requisite, sufficient or optional) after the login module")?;
    if !matches!(
        flag.as_str(),
        "required" | "requisite" | "sufficient" | "optional"
    ) {
        return Err(format!(
            "sasl.jaas.config: '{flag}' is not a control flag (required, requisite, sufficient or optional)"
        ));
    }
    let mut options = BTreeMap::new();
    loop {
        p.skip_ws();
        match p.peek() {
            Some(b';') => {
                p.i += 1;
                break;
            }
            None => return Err("sasl.jaas.config: the login module must end with ';'".into()),
            _ => {}
        }
        let key = p
            .word()
            .ok_or("sasl.jaas.config: expected an option name")?;
        p.skip_ws();
        if p.peek() != Some(b'=') {
            return Err(format!("sasl.jaas.config: option '{key}' has no '='"));
        }
        p.i += 1;
        p.skip_ws();
        let value = if p.peek() == Some(b'"') {
            p.quoted().ok_or_else(|| {
                format!("sasl.jaas.config: the value of '{key}' is not closed by '\"'")
            })?
        } else {
            p.word()
                .ok_or_else(|| format!("sasl.jaas.config: option '{key}' has no value"))?
        };
        if options.insert(key.clone(), value).is_some() {
            return Err(format!("sasl.jaas.config: option '{key}' is given twice"));
        }
    }
    p.skip_ws();
    if p.peek().is_some() {
        return Err(
            "sasl.jaas.config: one login module only (text follows the first one's ';')".into(),
        );
    }
    Ok(LoginModule {
        class,
        flag,
        options,
    })
}

struct Parser<'a> {
    s: &'a [u8],
    i: usize,
}

impl Parser<'_> {
    fn peek(&self) -> Option<u8> {
        self.s.get(self.i).copied()
    }
    fn skip_ws(&mut self) {
        while matches!(self.peek(), Some(c) if c.is_ascii_whitespace()) {
            self.i += 1;
        }
    }
    /// A bare word: anything up to whitespace, '=', ';' or '"'.
    fn word(&mut self) -> Option<String> {
        self.skip_ws();
        let start = self.i;
        while matches!(self.peek(), Some(c) if !c.is_ascii_whitespace() && !b"=;\"".contains(&c)) {
            self.i += 1;
        }
        (self.i > start).then(|| String::from_utf8_lossy(&self.s[start..self.i]).into_owned())
    }
    /// A quoted value; the opening quote is at `i`.
    fn quoted(&mut self) -> Option<String> {
        debug_assert_eq!(self.peek(), Some(b'"'));
        self.i += 1;
        let mut out = Vec::new();
        loop {
            match self.peek()? {
                b'"' => {
                    self.i += 1;
                    return Some(String::from_utf8_lossy(&out).into_owned());
                }
                b'\\' => {
                    self.i += 1;
                    out.push(self.peek()?);
                    self.i += 1;
                }
                c => {
                    out.push(c);
                    self.i += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_kafkas_plain_example() {
        let m = parse(
            "org.apache.kafka.common.security.plain.PlainLoginModule required\n  \
             username=\"admin\"\n  password=\"admin-secret\"\n  user_admin=\"admin-secret\"\n  \
             user_alice=\"al\\\"ice;=\";",
        )
        .unwrap();
        assert_eq!(
            m.class,
            "org.apache.kafka.common.security.plain.PlainLoginModule"
        );
        assert_eq!(m.flag, "required");
        assert_eq!(m.options["username"], "admin");
        assert_eq!(m.options["user_admin"], "admin-secret");
        assert_eq!(m.options["user_alice"], "al\"ice;=");
        let bare = parse("a.B optional x=y;").unwrap();
        assert_eq!(bare.options["x"], "y");
    }

    #[test]
    fn refuses_what_is_not_one_login_module() {
        for (text, says) in [
            ("", "login module class"),
            ("a.B", "control flag"),
            ("a.B mandatory;", "not a control flag"),
            ("a.B required x=\"y\"", "end with ';'"),
            ("a.B required x \"y\";", "has no '='"),
            ("a.B required x=\"y;", "not closed"),
            ("a.B required x=\"1\" x=\"2\";", "given twice"),
            ("a.B required; c.D required;", "one login module only"),
        ] {
            let e = parse(text).unwrap_err();
            assert!(e.contains(says), "{text:?}: {e}");
        }
        // A password never appears in an error.
        let e = parse("a.B required user_x=\"s3cret\" user_x=\"s3cret\";").unwrap_err();
        assert!(!e.contains("s3cret"), "{e}");
    }
}
