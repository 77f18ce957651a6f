//! JSON to YAML (block style), for `GET /openapi.yaml`: every string is written as a JSON
//! (double-quoted) scalar, which YAML 1.2 reads back as the same string, so no escaping rule of
//! YAML's own is needed.

use serde_json::Value;

pub fn to_yaml(v: &Value) -> String {
    let mut out = String::new();
    match v {
        Value::Object(m) if !m.is_empty() => block_map(m, 0, &mut out),
        Value::Array(a) if !a.is_empty() => block_seq(a, 0, &mut out),
        other => {
            out.push_str(&scalar(other));
            out.push('\n');
        }
    }
    out
}

fn scalar(v: &Value) -> String {
    match v {
        Value::Object(_) => "{}".into(),
        Value::Array(_) => "[]".into(),
        // A JSON string, number, boolean or null is a valid YAML flow scalar of the same value.
        other => other.to_string(),
    }
}

fn is_block(v: &Value) -> bool {
    match v {
        Value::Object(m) => !m.is_empty(),
        Value::Array(a) => !a.is_empty(),
        _ => false,
    }
}

fn block_map(m: &serde_json::Map<String, Value>, indent: usize, out: &mut String) {
    for (k, v) in m {
        out.push_str(&" ".repeat(indent));
        out.push_str(&Value::String(k.clone()).to_string());
        out.push(':');
        value_after_key(v, indent, out);
    }
}

fn block_seq(a: &[Value], indent: usize, out: &mut String) {
    for v in a {
        out.push_str(&" ".repeat(indent));
        out.push('-');
        value_after_key(v, indent, out);
    }
}

fn value_after_key(v: &Value, indent: usize, out: &mut String) {
    if is_block(v) {
        out.push('\n');
        match v {
            Value::Object(m) => block_map(m, indent + 2, out),
            Value::Array(a) => block_seq(a, indent + 2, out),
            _ => {}
        }
    } else {
        out.push(' ');
        out.push_str(&scalar(v));
        out.push('\n');
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn nested_maps_and_lists() {
        let v = json!({"a": {"b": [1, {"c": "x: y"}], "e": {}}, "d": []});
        assert_eq!(
            to_yaml(&v),
            "\"a\":\n  \"b\":\n    - 1\n    -\n      \"c\": \"x: y\"\n  \"e\": {}\n\"d\": []\n"
        );
    }
}
