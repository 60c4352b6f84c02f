//! An enum spelled once. Its `#[derive(clap::ValueEnum)]` (with `#[value(...)]`
//! where a name is not the variant's in kebab case) is the only list of its
//! names: the flag parses them, [`name`] writes them into run.json and the
//! text, [`list`] names them in errors, and [`serde_by_name!`] makes its
//! serde form the same names.

use clap::ValueEnum;

/// The name of `e`: what its flag takes and what a run records.
pub fn name<E: ValueEnum>(e: &E) -> String {
    e.to_possible_value().map(|p| p.get_name().to_string()).unwrap_or_default()
}

/// Every name, comma-separated, for errors ("self, external, cgroup, none").
pub fn list<E: ValueEnum>() -> String {
    E::value_variants().iter().map(name).collect::<Vec<_>>().join(", ")
}

/// The value called `s` (exactly: case matters), or an error naming `what`
/// and every accepted name.
pub fn parse<E: ValueEnum>(what: &str, s: &str) -> Result<E, String> {
    E::from_str(s, false).map_err(|_| format!("unknown {what} '{}': expected {}", shown(s), list::<E>()))
}

/// A value as an error quotes it: control characters escaped, so that the
/// refusal stays one line whatever a file held (a run.json's mode of
/// "a b\r c" made two), a backslash doubled, so that an escaped carriage
/// return and a literal `\r` read apart, and at most 40 characters of it.
fn shown(s: &str) -> String {
    let n = s.chars().count();
    let mut out = record::rundir::one_line(s.chars().take(40).collect::<String>().replace('\\', "\\\\"));
    if n > 40 {
        out.push_str(&format!("… ({n} characters)"));
    }
    out
}

/// Serialize, Deserialize, Display and a JSON schema (a string, one of its
/// names) for a `ValueEnum` by its names (a name it does not know is an error
/// listing them), so that a record keeps the enum, not a string.
#[macro_export]
macro_rules! serde_by_name {
    ($t:ty, $what:literal) => {
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.pad(&$crate::kit::names::name(self))
            }
        }
        impl schemars::JsonSchema for $t {
            fn schema_name() -> std::borrow::Cow<'static, str> {
                stringify!($t).into()
            }
            fn schema_id() -> std::borrow::Cow<'static, str> {
                concat!(module_path!(), "::", stringify!($t)).into()
            }
            fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let names: Vec<String> =
                    <$t as clap::ValueEnum>::value_variants().iter().map($crate::kit::names::name).collect();
                schemars::json_schema!({ "type": "string", "enum": names, "description": concat!("The ", $what, ", by its name.") })
            }
        }
        impl serde::Serialize for $t {
            fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                s.serialize_str(&$crate::kit::names::name(self))
            }
        }
        impl<'de> serde::Deserialize<'de> for $t {
            fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                let s = <std::borrow::Cow<'de, str> as serde::Deserialize>::deserialize(d)?;
                $crate::kit::names::parse($what, &s).map_err(serde::de::Error::custom)
            }
        }
    };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
    enum Way {
        #[value(name = "self")]
        Mine,
        CapMax,
    }
    crate::serde_by_name!(Way, "way");

    #[test]
    fn one_spelling_for_the_flag_the_record_and_the_errors() {
        assert_eq!((name(&Way::Mine), name(&Way::CapMax)), ("self".to_string(), "cap-max".to_string()));
        assert_eq!(list::<Way>(), "self, cap-max");
        assert_eq!(parse::<Way>("way", "cap-max"), Ok(Way::CapMax));
        assert_eq!(parse::<Way>("way", "CAP-MAX"), Err("unknown way 'CAP-MAX': expected self, cap-max".into()));
        assert_eq!(serde_json::to_string(&Way::Mine).unwrap(), "\"self\"");
        assert_eq!(serde_json::from_str::<Way>("\"cap-max\"").unwrap(), Way::CapMax);
        let e = serde_json::from_str::<Way>("\"mine\"").unwrap_err().to_string();
        assert!(e.contains("unknown way 'mine': expected self, cap-max"), "{e}");
        assert_eq!(Way::CapMax.to_string(), "cap-max");
        assert_eq!(format!("[{:>8}]", Way::Mine), "[    self]", "a table's width holds");
        let schema = serde_json::to_value(schemars::schema_for!(Way)).unwrap();
        assert_eq!(schema["enum"], serde_json::json!(["self", "cap-max"]), "{schema}");
    }

    /// A name read from a file is quoted on one line, and briefly: the
    /// hostile round's run.json whose mode was "a b\r c" made a two-line
    /// refusal.
    #[test]
    fn an_unknown_name_is_quoted_on_one_line_and_briefly() {
        let e = parse::<Way>("way", "a b\r c\n\u{1b}[2J").unwrap_err();
        assert_eq!(e, "unknown way 'a b\\r c\\n\\u{1b}[2J': expected self, cap-max");
        assert!(!e.chars().any(char::is_control), "{e:?}");
        let e = parse::<Way>("way", &"x".repeat(1000)).unwrap_err();
        assert!(e.starts_with(&format!("unknown way '{}… (1000 characters)'", "x".repeat(40))), "{e}");
        let e = serde_json::from_str::<Way>("\"a\\nb\"").unwrap_err().to_string();
        assert!(e.contains("unknown way 'a\\nb'") && !e.contains('\n'), "{e}");
        // A literal backslash-r and a carriage return read apart.
        let literal = parse::<Way>("way", "a\\rb").unwrap_err();
        let cr = parse::<Way>("way", "a\rb").unwrap_err();
        assert_eq!(
            (literal.as_str(), cr.as_str()),
            ("unknown way 'a\\\\rb': expected self, cap-max", "unknown way 'a\\rb': expected self, cap-max")
        );
    }
}
