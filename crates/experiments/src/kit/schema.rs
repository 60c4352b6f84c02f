//! The published schemas (schema/run.schema.json, the `results` of run.json;
//! schema/experiment-output.schema.json, an experiment's `--json`) assembled
//! from each experiment's fragment, generated from its types ([`generate`]):
//! the shape of its results in each document, and the `$defs` it owns (named
//! `<experiment>_*`). Everything else in those files (the run's own fields,
//! the environment, the status) is shared, and generated from its own type
//! ([`Doc::envelope`]).
//!
//! A test (src/walk.rs) checks that each published file is what [`assemble`]
//! makes of it; `PAGELAB_BLESS=1 cargo test --bin pagelab schemas` rewrites
//! them after an experiment's types changed or one was added.

use serde_json::{Map, Value, json};

/// Which published document.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Doc {
    /// schema/run.schema.json: run.json.
    Run,
    /// schema/experiment-output.schema.json: an experiment's `--json`.
    Output,
}

impl Doc {
    pub const ALL: [Doc; 2] = [Doc::Run, Doc::Output];

    /// Its path in the repository.
    pub fn path(self) -> &'static str {
        match self {
            Doc::Run => "schema/run.schema.json",
            Doc::Output => "schema/experiment-output.schema.json",
        }
    }

    /// The document's own part, generated from its type: run.json's fields
    /// ([`record::rundir::RunJson`]), or what every experiment's `--json`
    /// has ([`crate::kit::run::WithDir`]). Open: each experiment's fragment
    /// adds the shape of its results ([`assemble`]).
    pub fn envelope(self) -> Value {
        let id = format!("pagelab/{}", self.path());
        // As read (schemars' deserialize contract), as the fragments are: a
        // run.json written by an older pagelab is read, and checked, too.
        let read = schemars::generate::Contract::Deserialize;
        let mut v = match self {
            Doc::Run => generated::<record::rundir::RunJson>(&id, "pagelab run.json", read),
            Doc::Output => generated::<crate::kit::run::WithDir<crate::kit::run::Doc<Value>>>(
                &id,
                "pagelab eat|wscap|heap|mapping|thrash|jank|assess|rightsize --json",
                read,
            ),
        };
        with_format(&mut v);
        v
    }

    fn key(self) -> &'static str {
        match self {
            Doc::Run => "run",
            Doc::Output => "output",
        }
    }
}

/// One experiment's fragment: its name, and its `run`, `output` and `$defs`.
pub struct Fragment {
    pub name: &'static str,
    pub schema: Value,
}

impl Fragment {
    /// Parses a fragment written as text; Err names what is wrong.
    pub fn parse(name: &'static str, text: &str) -> Result<Fragment, String> {
        let schema: Value = serde_json::from_str(text).map_err(|e| format!("{name}'s schema fragment: {e}"))?;
        Fragment::from_value(name, schema)
    }

    /// An experiment's fragment as made ([`generate`]); Err names what is wrong.
    pub fn from_value(name: &'static str, schema: Value) -> Result<Fragment, String> {
        for key in ["run", "output", "$defs"] {
            if !schema.get(key).is_some_and(Value::is_object) {
                return Err(format!("{name}'s schema fragment: no object \"{key}\""));
            }
        }
        let prefix = format!("{name}_");
        if let Some(k) =
            schema["$defs"].as_object().into_iter().flatten().map(|(k, _)| k).find(|k| !k.starts_with(&prefix))
        {
            return Err(format!("{name}'s schema fragment: $defs/{k} is not named {prefix}*"));
        }
        Ok(Fragment { name, schema })
    }
}

/// An experiment's fragment generated from its types, so that it cannot
/// drift from them: its run.json entries are `R` (published as
/// `<name>_result`), its `--json` document is `O` (its properties but the
/// shared `experiment`), and every type they reach is a `$defs` entry named
/// `<name>_<Type>`. Its required fields are those a reader requires; every
/// float may be null (serde writes a NaN or
/// an infinity as null), and formats (`uint64`, `double`) are left out.
pub fn generate<R: schemars::JsonSchema, O: schemars::JsonSchema>(name: &str) -> Value {
    // The reading side: what pagelab reads back, so a record of an older
    // version with a field it defaults is valid, and a field written only
    // when it has something (which must then read as its default) is not
    // required.
    let mut generator = schemars::generate::SchemaSettings::draft2020_12().into_generator();
    let r = generator.subschema_for::<R>();
    let o = generator.subschema_for::<O>();
    let target = |s: &schemars::Schema| {
        s.as_value()["$ref"].as_str().and_then(|r| r.strip_prefix("#/$defs/")).map(str::to_string).unwrap_or_default()
    };
    let (r_name, o_name) = (target(&r), target(&o));
    let rename = |k: &str| if k == r_name { format!("{name}_result") } else { format!("{name}_{k}") };
    let mut defs = Map::new();
    let mut output = Value::Null;
    for (k, v) in generator.take_definitions(true) {
        let mut v = v;
        tidy(&mut v, &rename);
        if k == o_name {
            let mut props = v["properties"].as_object().cloned().unwrap_or_default();
            props.remove("experiment");
            output = json!({"properties": props});
        } else {
            defs.insert(rename(&k), v);
        }
    }
    let results = json!({"type": "array", "items": {"$ref": format!("#/$defs/{name}_result")}});
    json!({"run": {"properties": {"results": results}}, "output": output, "$defs": defs})
}

/// A `--json` document's schema generated whole from its type `T` (issue
/// 60: no schema written by hand), as the type is written (schemars'
/// serialize contract: a field always written is required, null where it
/// may be): the type's properties, required fields and `$defs`, tidied as
/// a fragment's (floats nullable; no formats, defaults or titles), with
/// `$id`, `title` and the `format` every `--json` document carries
/// ([`crate::kit::print_json`]). Open: a field added later does not change
/// the format, and readers ignore what they do not know (docs/schema.md).
pub fn whole<T: schemars::JsonSchema>(id: &str, title: &str) -> Value {
    let mut v = part::<T>(id, title);
    with_format(&mut v);
    v
}

/// The schema of a document that is part of others (lab.json's and report
/// --json's `findings`), generated from its type `T`: as [`whole`], without
/// the `format` a document printed on its own carries.
pub fn part<T: schemars::JsonSchema>(id: &str, title: &str) -> Value {
    generated::<T>(id, title, schemars::generate::Contract::Serialize)
}

/// `T`'s schema under `contract` (as written, or as read), tidied, with
/// `$id` and `title`.
fn generated<T: schemars::JsonSchema>(id: &str, title: &str, contract: schemars::generate::Contract) -> Value {
    let mut settings = schemars::generate::SchemaSettings::draft2020_12();
    settings.contract = contract;
    let mut v = settings.into_generator().root_schema_for::<T>().to_value();
    tidy(&mut v, &|k: &str| k.to_string());
    let m = v.as_object_mut().expect("a type's schema is an object");
    m.insert("$id".into(), json!(id));
    m.insert("title".into(), json!(title));
    v
}

/// A document that is one of several shapes, each generated from its type
/// (with `format`, as [`whole`]): `oneOf` the shapes, their `$defs` merged.
/// Each shape is closed (no property it does not name), so that exactly one
/// matches. Two shapes that define one name differently are a bug in the types.
pub fn one_of(id: &str, title: &str, description: &str, shapes: Vec<Value>) -> Value {
    let mut defs = Map::new();
    let mut arms = Vec::new();
    for mut s in shapes {
        let m = s.as_object_mut().expect("a type's schema is an object");
        for k in ["$schema", "$id", "title"] {
            m.remove(k);
        }
        m.insert("additionalProperties".into(), json!(false));
        if let Some(Value::Object(d)) = m.remove("$defs") {
            for (k, v) in d {
                if let Some(old) = defs.get(&k) {
                    assert_eq!(old, &v, "two shapes of {id} define {k} differently");
                }
                defs.insert(k, v);
            }
        }
        arms.push(s);
    }
    let mut out = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": id,
        "title": title,
        "description": description,
        "oneOf": arms,
    });
    if !defs.is_empty() {
        out["$defs"] = Value::Object(defs);
    }
    out
}

/// A schema whose numbers are never null: every `["number", "null"]` (what
/// [`tidy`] makes of a float, which serde writes as null when it is not
/// finite) made `number` again, for a document that leaves such figures out
/// (report --bmf).
pub fn finite(v: &mut Value) {
    match v {
        Value::Object(m) => {
            if let Some(t) = m.get_mut("type")
                && *t == json!(["number", "null"])
            {
                *t = json!("number");
            }
            m.values_mut().for_each(finite);
        }
        Value::Array(a) => a.iter_mut().for_each(finite),
        _ => {}
    }
}

/// `format`, the layout version, added to a document's schema as a required
/// first property.
fn with_format(v: &mut Value) {
    let m = v.as_object_mut().expect("a type's schema is an object");
    m.entry("properties").or_insert_with(|| json!({}))["format"] = json!({
        "type": "integer",
        "description": "Layout version of this document. Readers refuse a format newer than theirs; adding a field \
                        does not change it.",
        "minimum": 1
    });
    let req = m.entry("required").or_insert_with(|| json!([]));
    if let Some(r) = req.as_array_mut()
        && !r.iter().any(|x| x == "format")
    {
        r.insert(0, json!("format"));
    }
}

/// A schema tidied: references renamed, floats nullable, and the keywords a
/// reader has no use for (format, default, title) dropped. The maps of
/// names (`properties`, `$defs`) are not schemas themselves: their members are.
fn tidy(v: &mut Value, rename: &dyn Fn(&str) -> String) {
    match v {
        Value::Object(m) => {
            for k in ["format", "default", "title"] {
                m.remove(k);
            }
            if let Some(Value::String(r)) = m.get_mut("$ref")
                && let Some(k) = r.strip_prefix("#/$defs/")
            {
                *r = format!("#/$defs/{}", rename(k));
            }
            match m.get_mut("type") {
                Some(t) if t == "number" => *t = json!(["number", "null"]),
                Some(Value::Array(ts)) if ts.iter().any(|t| t == "number") && !ts.iter().any(|t| t == "null") => {
                    ts.push(json!("null"))
                }
                _ => {}
            }
            for (k, x) in m.iter_mut() {
                match (k.as_str(), x) {
                    ("properties" | "$defs" | "patternProperties", Value::Object(named)) => {
                        named.values_mut().for_each(|s| tidy(s, rename))
                    }
                    ("$ref" | "type" | "required" | "description" | "enum" | "const", _) => {}
                    (_, x) => tidy(x, rename),
                }
            }
        }
        Value::Array(a) => a.iter_mut().for_each(|x| tidy(x, rename)),
        _ => {}
    }
}

/// The published document `doc` made from `published` (for its shared part)
/// and the fragments, in the lab's order: each experiment's `if`/`then` on
/// `experiment`, the `$defs` its `then` reaches, and the list of names.
pub fn assemble(doc: Doc, published: &Value, frags: &[Fragment]) -> Value {
    let mut out = published.clone();
    let owned = |k: &str| frags.iter().any(|f| k.starts_with(&format!("{}_", f.name)));
    let mut defs: Map<String, Value> = published["$defs"]
        .as_object()
        .map(|m| m.iter().filter(|(k, _)| !owned(k)).map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    let mut all_of = Vec::new();
    for f in frags {
        let then = &f.schema[doc.key()];
        all_of.push(json!({"if": {"properties": {"experiment": {"const": f.name}}}, "then": then}));
        for k in reached(then, &f.schema["$defs"]) {
            defs.insert(k.clone(), f.schema["$defs"][&k].clone());
        }
    }
    out["allOf"] = Value::Array(all_of);
    out["$defs"] = Value::Object(defs);
    let names: Vec<&str> = frags.iter().map(|f| f.name).collect();
    match doc {
        Doc::Run => {
            out["properties"]["experiment"]["description"] = json!(format!("{}, record or monitor", names.join(", ")))
        }
        Doc::Output => out["properties"]["experiment"]["enum"] = json!(names),
    }
    out
}

/// The names in `defs` that `v` refers to (`#/$defs/NAME`), directly or
/// through one another.
fn reached(v: &Value, defs: &Value) -> Vec<String> {
    let mut seen: Vec<String> = Vec::new();
    let mut todo = refs(v);
    while let Some(k) = todo.pop() {
        if seen.contains(&k) || defs.get(&k).is_none() {
            continue;
        }
        todo.extend(refs(&defs[&k]));
        seen.push(k);
    }
    seen
}

fn refs(v: &Value) -> Vec<String> {
    match v {
        Value::Object(m) => m
            .iter()
            .flat_map(|(k, x)| match (k.as_str(), x.as_str()) {
                ("$ref", Some(r)) => r.strip_prefix("#/$defs/").map(str::to_string).into_iter().collect(),
                _ => refs(x),
            })
            .collect(),
        Value::Array(a) => a.iter().flat_map(refs).collect(),
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frag(name: &'static str, then_ref: &str) -> Fragment {
        let text = json!({
            "run": {"properties": {"results": {"items": {"$ref": format!("#/$defs/{then_ref}")}}}},
            "output": {"properties": {"results": {"items": {"$ref": format!("#/$defs/{name}_inner")}}}},
            "$defs": {
                format!("{name}_result"): {"properties": {"x": {"$ref": format!("#/$defs/{name}_inner")}}},
                format!("{name}_inner"): {"type": "object"},
                format!("{name}_unused"): {"type": "object"},
            }
        });
        Fragment::parse(name, &text.to_string()).unwrap()
    }

    #[test]
    fn a_document_takes_each_fragment_and_keeps_its_own_part() {
        let published = json!({
            "title": "t",
            "properties": {"experiment": {"type": "string"}},
            "allOf": [{"if": {"properties": {"experiment": {"const": "gone"}}}}],
            "$defs": {"environment": {"type": "object"}, "a_result": {"stale": true}},
        });
        let frags = [frag("a", "a_result"), frag("b", "b_result")];
        let run = assemble(Doc::Run, &published, &frags);
        assert_eq!(run["title"], "t");
        assert_eq!(run["allOf"].as_array().unwrap().len(), 2);
        assert_eq!(run["allOf"][1]["if"]["properties"]["experiment"]["const"], "b");
        let defs = run["$defs"].as_object().unwrap();
        // Shared defs stay; an experiment's are replaced by its fragment's,
        // and only those its `then` reaches are published.
        assert!(defs.contains_key("environment"));
        assert_eq!(defs["a_result"]["properties"]["x"]["$ref"], "#/$defs/a_inner");
        assert!(defs.contains_key("a_inner") && !defs.contains_key("a_unused"));
        assert_eq!(run["properties"]["experiment"]["description"], "a, b, record or monitor");
        let out = assemble(Doc::Output, &published, &frags);
        assert!(!out["$defs"].as_object().unwrap().contains_key("b_result"));
        assert_eq!(out["properties"]["experiment"]["enum"], json!(["a", "b"]));
        // Assembling again changes nothing.
        assert_eq!(assemble(Doc::Run, &run, &frags), run);
    }

    /// A result type.
    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    #[serde(deny_unknown_fields)]
    struct Thing {
        /// Its name.
        name: String,
        #[serde(default)]
        count: u64,
        ratio: f64,
        part: Option<Part>,
    }

    #[derive(serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
    struct Part {
        format: String,
    }

    #[derive(serde::Serialize, schemars::JsonSchema)]
    struct Out {
        experiment: &'static str,
        results: Vec<Thing>,
        extra: u32,
    }

    /// The fragment follows the types: the entry is `<x>_result`, what it
    /// reaches `<x>_<Type>` (references renamed), required is what the
    /// reader requires, a float may be null, a doc comment is the
    /// description, formats go (but not a field called `format`), and the
    /// output is the document's own properties but `experiment`.
    #[test]
    fn a_fragment_is_generated_from_the_types() {
        let f = Fragment::from_value("x", generate::<Thing, Out>("x")).unwrap();
        let defs = f.schema["$defs"].as_object().unwrap();
        let mut names: Vec<&str> = defs.keys().map(String::as_str).collect();
        names.sort();
        assert_eq!(names, ["x_Part", "x_result"]);
        let t = &defs["x_result"];
        assert_eq!(t["required"], json!(["name", "ratio"]));
        assert_eq!(t["additionalProperties"], false);
        assert_eq!(t["properties"]["name"]["description"], "Its name.");
        assert_eq!(t["properties"]["ratio"]["type"], json!(["number", "null"]));
        assert!(t["properties"]["count"].get("format").is_none() && t["properties"]["count"].get("default").is_none());
        assert!(t.to_string().contains("#/$defs/x_Part"), "{t}");
        assert_eq!(defs["x_Part"]["properties"]["format"]["type"], "string");
        assert_eq!(f.schema["run"]["properties"]["results"]["items"]["$ref"], "#/$defs/x_result");
        let out = f.schema["output"]["properties"].as_object().unwrap();
        assert!(out.contains_key("results") && out.contains_key("extra") && !out.contains_key("experiment"));
        assert_eq!(out["results"]["items"]["$ref"], "#/$defs/x_result");
    }

    #[test]
    fn a_fragment_owns_only_its_own_names() {
        let bad = json!({"run": {}, "output": {}, "$defs": {"environment": {}}});
        let e = Fragment::parse("a", &bad.to_string()).err().unwrap();
        assert!(e.contains("$defs/environment is not named a_*"), "{e}");
        assert!(Fragment::parse("a", "{\"run\": {}}").is_err());
        assert!(Fragment::parse("a", "not json").is_err());
    }
}
