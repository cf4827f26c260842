//! The principal of a TLS client: the subject of its certificate as Java prints it (RFC 2253),
//! mapped by `ssl.principal.mapping.rules`.

use std::sync::OnceLock;

use regex::Regex;
use rustls_pki_types::CertificateDer;
use x509_parser::der_parser::asn1_rs::{Any, Tag};
use x509_parser::x509::AttributeTypeAndValue;

use super::TlsSettings;

/// The principal of a client: `User:ANONYMOUS` without a certificate, else `User:` and the
/// subject of its certificate (RFC 2253, as Java prints it) mapped by the listener's
/// `ssl.principal.mapping.rules`. An error when no rule matches (Kafka refuses the client).
pub fn principal_of(
    settings: &TlsSettings,
    peer_certs: Option<&[CertificateDer<'_>]>,
) -> Result<String, String> {
    let Some(cert) = peer_certs.and_then(|c| c.first()) else {
        return Ok("User:ANONYMOUS".to_string());
    };
    let dn = subject_dn(cert)?;
    Ok(format!("User:{}", settings.mapper.map(&dn)?))
}

/// The subject of a DER certificate as Java's `X500Principal.getName()` (RFC 2253) prints it:
/// most specific RDN first, RFC 2253 keywords (CN, L, ST, O, OU, C, STREET, DC, UID), other
/// attribute types as dotted OIDs with `#`-hex values.
pub fn subject_dn(cert: &[u8]) -> Result<String, String> {
    let (_, cert) = x509_parser::parse_x509_certificate(cert)
        .map_err(|e| format!("cannot parse the client certificate: {e}"))?;
    let rdns: Vec<String> = cert
        .subject()
        .iter_rdn()
        .map(|rdn| rdn.iter().map(ava_rfc2253).collect::<Vec<_>>().join("+"))
        .collect();
    Ok(rdns.into_iter().rev().collect::<Vec<_>>().join(","))
}

/// One attribute as `type=value`, the way Java's RFC 2253 output writes it.
fn ava_rfc2253(ava: &AttributeTypeAndValue<'_>) -> String {
    #[rustfmt::skip]
    const KEYWORDS: [(&str, &str); 9] = [
        ("2.5.4.3", "CN"), ("2.5.4.6", "C"), ("2.5.4.7", "L"), ("2.5.4.8", "ST"),
        ("2.5.4.9", "STREET"), ("2.5.4.10", "O"), ("2.5.4.11", "OU"),
        ("0.9.2342.19200300.100.1.25", "DC"), ("0.9.2342.19200300.100.1.1", "UID"),
    ];
    // The types Java prints as strings (their bytes decoded as UTF-8, whatever the type).
    #[rustfmt::skip]
    const STRINGS: [Tag; 6] = [
        Tag::PrintableString, Tag::T61String, Tag::Ia5String, Tag::GeneralString,
        Tag::BmpString, Tag::Utf8String,
    ];
    let oid = ava.attr_type().to_id_string();
    let keyword = KEYWORDS.iter().find(|(o, _)| *o == oid).map(|(_, k)| *k);
    let v = ava.attr_value();
    match keyword {
        Some(k)
            if v.header.is_universal() && v.header.is_primitive() && STRINGS.contains(&v.tag()) =>
        {
            format!("{k}={}", escape_rfc2253(&String::from_utf8_lossy(v.data)))
        }
        k => {
            let hex: String = der_of(v).iter().map(|b| format!("{b:02x}")).collect();
            format!("{}=#{hex}", k.unwrap_or(&oid))
        }
    }
}

/// Escapes an attribute value as Java does: `,=+<>#;"\` behind a backslash, NUL as `\00`,
/// leading and trailing spaces (and carriage returns) behind a backslash each.
fn escape_rfc2253(value: &str) -> String {
    let mut chars: Vec<char> = Vec::with_capacity(value.len());
    for c in value.chars() {
        match c {
            ',' | '=' | '+' | '<' | '>' | '#' | ';' | '"' | '\\' => chars.extend(['\\', c]),
            '\0' => chars.extend(['\\', '0', '0']),
            c => chars.push(c),
        }
    }
    let blank = |c: &char| *c == ' ' || *c == '\r';
    let lead = chars.iter().take_while(|c| blank(c)).count();
    let trail = chars.len() - chars.iter().rev().take_while(|c| blank(c)).count();
    let mut out = String::with_capacity(chars.len() + 4);
    for (i, c) in chars.into_iter().enumerate() {
        if i < lead || i >= trail.max(lead) {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

/// The DER encoding of a value: identifier octets (kept by the parser), length, contents.
fn der_of(v: &Any<'_>) -> Vec<u8> {
    let mut out = v
        .header
        .raw_tag()
        .map_or_else(|| vec![v.tag().0 as u8], <[u8]>::to_vec);
    let len = v.data.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|b| **b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(v.data);
    out
}

/// Kafka's `ssl.principal.mapping.rules`: a list of `RULE:pattern/replacement/` (optionally
/// followed by `L` or `U` to lower- or upper-case the result) and `DEFAULT` (the name
/// unchanged), separated by commas or newlines. The first rule whose pattern matches the
/// whole name applies; `replacement` follows Java's syntax (`$1`, `${name}`, `\` escapes).
#[derive(Clone, Debug)]
pub struct PrincipalMapper {
    rules: Vec<Rule>,
    text: String,
}

#[derive(Clone, Debug)]
enum Rule {
    Default,
    Map(MapRule),
}

#[derive(Clone, Debug)]
struct MapRule {
    /// The pattern anchored at both ends: Java's `matches()`.
    whole: Regex,
    /// The pattern as written, for the replacement (Java's `replaceAll`).
    find: Regex,
    replacement: Vec<Piece>,
    case: Case,
}

#[derive(Clone, Debug)]
enum Piece {
    Text(String),
    Group(usize),
    Named(String),
}

#[derive(Clone, Copy, Debug)]
enum Case {
    Keep,
    Lower,
    Upper,
}

impl PrincipalMapper {
    pub fn parse(text: &str) -> Result<PrincipalMapper, String> {
        // One rule (or none: empty rules are ignored, as Kafka does) and the separator after it.
        static RULE: OnceLock<Regex> = OnceLock::new();
        let rule = RULE.get_or_init(|| {
            // A pattern or a replacement: up to an unescaped slash.
            let part = r"((?:\\[^\n]|[^\\/])*)";
            let rule = format!(r"(?:(DEFAULT)|RULE:{part}/{part}/([LU]?))?");
            Regex::new(&format!(r"\A[^\S\n]*{rule}[^\S\n]*(?:[,\n]|\z)")).expect("regex")
        });
        let mut rules = Vec::new();
        let mut rest = text;
        while !rest.is_empty() {
            let Some(c) = rule.captures(rest) else {
                let bad = rest.split([',', '\n']).next().unwrap_or(rest).trim();
                return Err(format!(
                    "invalid rule `{bad}`: rules are DEFAULT or RULE:pattern/replacement/ \
                     (optionally followed by L or U), separated by commas or newlines"
                ));
            };
            if c.get(1).is_some() {
                rules.push(Rule::Default);
            } else if let (Some(pattern), Some(replacement)) = (c.get(2), c.get(3)) {
                let case = match c.get(4).map(|m| m.as_str()) {
                    Some("L") => Case::Lower,
                    Some("U") => Case::Upper,
                    _ => Case::Keep,
                };
                rules.push(Rule::map(pattern.as_str(), replacement.as_str(), case)?);
            }
            let end = c.get(0).expect("group 0").end();
            debug_assert!(end > 0, "a match on a non-empty rest consumes something");
            rest = &rest[end..];
        }
        if rules.is_empty() {
            return Err("no rules (DEFAULT keeps the certificate's name as it is)".into());
        }
        Ok(PrincipalMapper {
            rules,
            text: text.trim().to_string(),
        })
    }

    /// The name `dn` maps to; an error if no rule applies.
    pub fn map(&self, dn: &str) -> Result<String, String> {
        for rule in &self.rules {
            if let Some(name) = rule.apply(dn) {
                return Ok(name);
            }
        }
        Err(format!(
            "no rule of ssl.principal.mapping.rules ({}) applies to the client certificate's \
             subject `{dn}`",
            self.text
        ))
    }
}

impl Rule {
    fn map(pattern: &str, replacement: &str, case: Case) -> Result<Rule, String> {
        let bad = |e: regex::Error| format!("rule pattern `{pattern}`: {e}");
        let find = Regex::new(pattern).map_err(bad)?;
        let whole = Regex::new(&format!("^(?:{pattern})$")).map_err(bad)?;
        let replacement = parse_replacement(replacement, &find)
            .map_err(|e| format!("rule replacement `{replacement}`: {e}"))?;
        Ok(Rule::Map(MapRule {
            whole,
            find,
            replacement,
            case,
        }))
    }

    fn apply(&self, dn: &str) -> Option<String> {
        let Rule::Map(MapRule {
            whole,
            find,
            replacement,
            case,
        }) = self
        else {
            return Some(dn.to_string());
        };
        if !whole.is_match(dn) {
            return None;
        }
        // Java's replaceAll: every match from the left; after an empty match the search
        // resumes one character later, and an empty match may follow a non-empty one.
        let mut out = String::new();
        let (mut copied, mut from) = (0, 0);
        while from <= dn.len() {
            let Some(caps) = find.captures_at(dn, from) else {
                break;
            };
            let m = caps.get(0).expect("group 0");
            out.push_str(&dn[copied..m.start()]);
            for piece in replacement {
                match piece {
                    Piece::Text(t) => out.push_str(t),
                    Piece::Group(g) => out.push_str(caps.get(*g).map_or("", |c| c.as_str())),
                    Piece::Named(n) => out.push_str(caps.name(n).map_or("", |c| c.as_str())),
                }
            }
            copied = m.end();
            from = if m.is_empty() {
                m.end() + dn[m.end()..].chars().next().map_or(1, char::len_utf8)
            } else {
                m.end()
            };
        }
        out.push_str(&dn[copied..]);
        Some(match case {
            Case::Keep => out,
            Case::Lower => out.to_lowercase(),
            Case::Upper => out.to_uppercase(),
        })
    }
}

/// A Java replacement string: `\x` is a literal x, `$n` group n (more digits while such a
/// group exists), `${name}` a named group. As in Kafka, `$n` beyond the pattern's groups is
/// literal text when the pattern has groups; Java would fail on every match when it has none,
/// which here is a start-up error.
fn parse_replacement(r: &str, re: &Regex) -> Result<Vec<Piece>, String> {
    let groups = re.captures_len() - 1;
    let chars: Vec<char> = r.chars().collect();
    let mut pieces = Vec::new();
    let mut text = String::new();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '\\' => {
                let c = chars.get(i + 1).ok_or("ends with an escaping backslash")?;
                text.push(*c);
                i += 2;
            }
            '$' => match chars.get(i + 1) {
                Some('{') => {
                    let name: String = chars[i + 2..].iter().take_while(|c| **c != '}').collect();
                    let len = name.chars().count();
                    if i + 2 + len >= chars.len() || name.is_empty() {
                        return Err("`${` must be followed by a group name and `}`".into());
                    }
                    if !re.capture_names().flatten().any(|n| n == name) {
                        return Err(format!("the pattern has no group named `{name}`"));
                    }
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                    pieces.push(Piece::Named(name));
                    i += 3 + len;
                }
                Some(d) if d.is_ascii_digit() => {
                    let mut n = d.to_digit(10).expect("digit") as usize;
                    if n > groups {
                        if groups == 0 {
                            return Err(format!("`${n}` names a group; the pattern has none"));
                        }
                        text.push('$');
                        i += 1;
                        continue;
                    }
                    i += 2;
                    while let Some(d) = chars.get(i).and_then(|c| c.to_digit(10)) {
                        let more = n * 10 + d as usize;
                        if more > groups {
                            break;
                        }
                        n = more;
                        i += 1;
                    }
                    pieces.push(Piece::Text(std::mem::take(&mut text)));
                    pieces.push(Piece::Group(n));
                }
                _ => {
                    return Err("`$` needs a group number or {name} after it (`\\$` is a $)".into())
                }
            },
            c => {
                text.push(c);
                i += 1;
            }
        }
    }
    pieces.push(Piece::Text(text));
    pieces.retain(|p| !matches!(p, Piece::Text(t) if t.is_empty()));
    Ok(pieces)
}
