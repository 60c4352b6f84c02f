//! A lab step's arguments, typed (issue 60 item 4): each experiment plans
//! its step as a struct of the flags the lab sets ([`LabArgs`], beside its
//! `lab_step`), and a control, a later pass or the lab's simulation changes
//! or reads that struct's fields, never a flag searched for in a command
//! line. The command line is rendered from the struct in one place
//! ([`argv`]: each field a flag, by its name) and read back through the
//! experiment's own clap parser ([`LabArgs::of`]), so a flag the struct
//! renders that the command does not take, or a value it would refuse, fails
//! the round trip that each experiment's tests make. The argv is only the
//! edge: the child's command line and lab.json's `args`.

use report::lab::Step;
use serde::Serialize;
use std::time::Duration;

/// An experiment's lab-step arguments.
pub trait LabArgs: Serialize + Sized {
    /// The experiment's command-line arguments, whose parser reads a step back.
    type Cli: clap::Args + clap::FromArgMatches;
    /// The experiment's name (its subcommand).
    const EXPERIMENT: &'static str;

    /// The fields the lab sets, from a parsed command line.
    fn from_cli(cli: Self::Cli) -> Self;

    /// Its command line after `pagelab <experiment>` (without `--repeat`,
    /// which the step keeps typed).
    fn argv(&self) -> Vec<String> {
        argv(self)
    }

    /// A planned step of these arguments, `repeat` repeats (None: the step
    /// takes no `--repeat`), expected to take `expect_s` seconds.
    fn step(&self, repeat: Option<u32>, expect_s: f64) -> Step {
        Step::planned(Self::EXPERIMENT, self.argv(), repeat, expect_s)
    }

    /// A step's arguments, typed, through the experiment's own parser; Err
    /// (clap's message) for a step that is not this experiment's or that its
    /// command would refuse.
    fn of(s: &Step) -> Result<Self, String> {
        if s.experiment != Self::EXPERIMENT {
            return Err(format!("a {} step is not {}'s", s.experiment, Self::EXPERIMENT));
        }
        parse::<Self::Cli>(Self::EXPERIMENT, &s.args).map(Self::from_cli)
    }
}

/// Step `s` read back as `L` and rendered again (an experiment's
/// `lab_args`).
pub fn round_trip<L: LabArgs>(s: &Step) -> Result<Vec<String>, String> {
    L::of(s).map(|a| a.argv())
}

/// `argv` through `A`'s parser, as `pagelab <name>` would read it.
pub fn parse<A: clap::Args + clap::FromArgMatches>(name: &str, argv: &[String]) -> Result<A, String> {
    let cmd = A::augment_args(clap::Command::new(name.to_string()).no_binary_name(true));
    let m = cmd.try_get_matches_from(argv).map_err(|e| e.to_string().trim().to_string())?;
    A::from_arg_matches(&m).map_err(|e| e.to_string().trim().to_string())
}

/// A struct's command line: each field `--its-name VALUE` in the struct's
/// order (flattened fields in place), `true` as the flag alone, `false`,
/// None and an empty list left out (the command's default), a list joined
/// by commas.
///
/// An empty list left out reads back as the command's default list, and the
/// round trip (`lab::tests`) then renders a line the plan did not: a plan
/// that empties a list fails there. A struct that does not serialise as one
/// (a bug of its type, never of the machine) stops here rather than run the
/// command on its defaults.
pub fn argv(args: &impl Serialize) -> Vec<String> {
    let text = serde_json::to_string(args).expect("a lab step's arguments serialise");
    let fields: Fields = serde_json::from_str(&text).expect("a lab step's arguments are a struct");
    let mut out = Vec::new();
    for (k, v) in fields.0 {
        let flag = format!("--{}", k.replace('_', "-"));
        match v {
            serde_json::Value::Null | serde_json::Value::Bool(false) => {}
            serde_json::Value::Array(a) if a.is_empty() => {}
            serde_json::Value::Bool(true) => out.push(flag),
            v => out.extend([flag, value(&v)]),
        }
    }
    out
}

/// A serialised struct's fields in its order (serde_json's own map sorts
/// them by name).
struct Fields(Vec<(String, serde_json::Value)>);

impl<'de> serde::Deserialize<'de> for Fields {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Fields, D::Error> {
        struct V;
        impl<'de> serde::de::Visitor<'de> for V {
            type Value = Fields;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a struct's fields")
            }
            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut m: A) -> Result<Fields, A::Error> {
                let mut v = Vec::new();
                while let Some(kv) = m.next_entry()? {
                    v.push(kv);
                }
                Ok(Fields(v))
            }
        }
        d.deserialize_map(V)
    }
}

fn value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Array(a) => a.iter().map(value).collect::<Vec<_>>().join(","),
        v => v.to_string(),
    }
}

/// A size on the command line: whole MiB as `64MiB`, whole KiB as
/// `128KiB`, else bytes (each a form [`crate::kit::units::parse_size`] takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Size(pub u64);

impl Size {
    /// `bytes` rounded down to whole MiB (a share of RAM, planned: whole
    /// pages, and the same step on machines a few KiB apart).
    pub fn whole_mib(bytes: u64) -> Size {
        Size(units::whole_mib(bytes) << 20)
    }
}

impl Serialize for Size {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let b = self.0;
        let text = if b > 0 && b % (1 << 20) == 0 {
            format!("{}MiB", units::whole_mib(b))
        } else if b > 0 && b % 1024 == 0 {
            format!("{}KiB", b >> 10)
        } else {
            b.to_string()
        };
        s.serialize_str(&text)
    }
}

/// A duration on the command line: whole seconds as `3s`, whole
/// milliseconds as `300ms`, else microseconds (forms
/// [`crate::kit::units::parse_duration`] takes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Dur(pub Duration);

impl Serialize for Dur {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let d = self.0;
        let text = if d.subsec_nanos() == 0 {
            format!("{}s", d.as_secs())
        } else if d.as_nanos() % 1_000_000 == 0 {
            format!("{}ms", d.as_millis())
        } else {
            format!("{}us", d.as_micros())
        };
        s.serialize_str(&text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Serialize)]
    struct Demo {
        size: Size,
        churn: Dur,
        idle: Dur,
        threads: Vec<u32>,
        knobs: Vec<u32>,
        growth_from: Option<u32>,
        over_time: bool,
        speed: bool,
        scale: f64,
        #[serde(flatten)]
        inner: Option<Inner>,
    }

    #[derive(Serialize)]
    struct Inner {
        live_set: Size,
    }

    #[test]
    fn a_struct_renders_as_its_flags() {
        let d = Demo {
            size: Size(64 << 20),
            churn: Dur(Duration::from_millis(300)),
            idle: Dur(Duration::from_secs(1)),
            threads: vec![1, 2, 4],
            knobs: vec![],
            growth_from: None,
            over_time: true,
            speed: false,
            scale: 0.05,
            inner: Some(Inner { live_set: Size(1536) }),
        };
        let a = argv(&d);
        let pair = |f: &str| a.iter().position(|x| x == f).map(|i| a[i + 1].as_str());
        assert_eq!(pair("--size"), Some("64MiB"));
        assert_eq!(pair("--churn"), Some("300ms"));
        assert_eq!(pair("--idle"), Some("1s"));
        assert_eq!(pair("--threads"), Some("1,2,4"));
        assert_eq!(pair("--scale"), Some("0.05"));
        assert_eq!(pair("--live-set"), Some("1536"), "flattened, and not whole KiB");
        assert!(a.contains(&"--over-time".to_string()), "true is the flag alone: {a:?}");
        assert!(
            !a.iter().any(|x| x == "--speed" || x == "--growth-from" || x == "--knobs"),
            "false, None and an empty list are left out: {a:?}"
        );
        assert_eq!(a.len(), 13, "{a:?}");
        assert_eq!(a[..4], ["--size", "64MiB", "--churn", "300ms"], "in the struct's order: {a:?}");
        assert_eq!(Size::whole_mib((64 << 20) + 4095), Size(64 << 20));
        assert_eq!(value(&serde_json::to_value(Dur(Duration::from_micros(1500))).unwrap()), "1500us");
    }

    #[test]
    fn a_step_is_read_back_through_the_commands_parser() {
        #[derive(clap::Args, Debug)]
        struct Cli {
            #[arg(long, value_parser = crate::kit::units::parse_nonzero_size)]
            size: u64,
            #[arg(long)]
            fast: bool,
        }
        #[derive(Serialize, Debug, PartialEq)]
        struct Lab {
            size: Size,
            fast: bool,
        }
        impl LabArgs for Lab {
            type Cli = Cli;
            const EXPERIMENT: &'static str = "demo";
            fn from_cli(c: Cli) -> Lab {
                Lab { size: Size(c.size), fast: c.fast }
            }
        }
        let lab = Lab { size: Size(32 << 20), fast: true };
        let s = lab.step(Some(3), 1.0);
        assert_eq!((s.experiment.as_str(), s.repeat), ("demo", Some(3)));
        assert_eq!(Lab::of(&s).unwrap(), lab);
        let mut bad = s.clone();
        bad.args.push("--nope".into());
        assert!(Lab::of(&bad).unwrap_err().contains("--nope"));
        bad.experiment = "eat".into();
        assert!(Lab::of(&bad).unwrap_err().contains("not demo's"));
    }
}
