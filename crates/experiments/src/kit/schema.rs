//! The published schemas (schema/run.schema.json, the `results` of run.json;
//! schema/experiment-output.schema.json, an experiment's `--json`) assembled
//! from each experiment's `schema.json`: the shape of its results in each
//! document, and the `$defs` it owns (named `<experiment>_*`). Everything else
//! in those files (the run's own fields, the environment, the status) is
//! shared and stays as written there.
//!
//! A test (src/walk.rs) checks that each published file is what [`assemble`]
//! makes of it; `PAGELAB_BLESS=1 cargo test --bin pagelab schemas` rewrites
//! them after an experiment's fragment changed or one was added.

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

    fn key(self) -> &'static str {
        match self {
            Doc::Run => "run",
            Doc::Output => "output",
        }
    }
}

/// One experiment's fragment, read: its name and its `schema.json`.
pub struct Fragment {
    pub name: &'static str,
    pub schema: Value,
}

impl Fragment {
    /// Parses an experiment's `schema.json`; Err names what is wrong.
    pub fn parse(name: &'static str, text: &str) -> Result<Fragment, String> {
        let schema: Value = serde_json::from_str(text).map_err(|e| format!("{name}/schema.json: {e}"))?;
        for key in ["run", "output", "$defs"] {
            if !schema.get(key).is_some_and(Value::is_object) {
                return Err(format!("{name}/schema.json: no object \"{key}\""));
            }
        }
        let prefix = format!("{name}_");
        if let Some(k) =
            schema["$defs"].as_object().into_iter().flatten().map(|(k, _)| k).find(|k| !k.starts_with(&prefix))
        {
            return Err(format!("{name}/schema.json: $defs/{k} is not named {prefix}*"));
        }
        Ok(Fragment { name, schema })
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

    #[test]
    fn a_fragment_owns_only_its_own_names() {
        let bad = json!({"run": {}, "output": {}, "$defs": {"environment": {}}});
        let e = Fragment::parse("a", &bad.to_string()).err().unwrap();
        assert!(e.contains("$defs/environment is not named a_*"), "{e}");
        assert!(Fragment::parse("a", "{\"run\": {}}").is_err());
        assert!(Fragment::parse("a", "not json").is_err());
    }
}
