//! What a dry run's answer is made of: the values only the confirmation sets (found by running
//! the write twice, a minute apart), and the differences it makes to the target.

use crate::mcp::envelope::Difference;
use serde_json::{json, Map, Value};

/// The items of a batch answer that the write changes: `{field: "<key>.<flag>", current,
/// proposed}` with the flag before and after.
pub(super) fn batch_differences(
    after: &Value,
    items: &str,
    key: &str,
    flag: &str,
) -> Vec<Difference> {
    after[items]
        .as_array()
        .map(|list| {
            list.iter()
                .filter(|item| item["changed"] == true)
                .map(|item| {
                    let name = item[key].as_str().unwrap_or("");
                    let now = item[flag].as_bool().unwrap_or(false);
                    Difference::new(format!("{name}.{flag}"), json!(!now), json!(now))
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Finds the values of a dry run that the confirmation sets anew, and blanks them.
pub(super) struct Settle<'a> {
    /// The clock (seconds) from before the first run to after the second.
    pub(super) window: (i64, i64),
    /// Values the caller gave: never blanked.
    pub(super) given: &'a Map<String, Value>,
}

impl Settle<'_> {
    pub(super) fn walk(
        &self,
        v: &mut Value,
        other: Option<&Value>,
        path: &str,
        set: &mut Vec<String>,
    ) {
        match v {
            Value::Object(map) => {
                for (k, x) in map.iter_mut() {
                    let p = join(path, k);
                    self.walk(x, other.and_then(|o| o.get(k.as_str())), &p, set);
                }
            }
            Value::Array(items) => {
                for (i, x) in items.iter_mut().enumerate() {
                    let p = format!("{path}[{i}]");
                    self.walk(x, other.and_then(|o| o.get(i)), &p, set);
                }
            }
            Value::Null => {}
            scalar => {
                if self.is_new(scalar, other, path) {
                    *scalar = Value::Null;
                    set.push(path.to_string());
                }
            }
        }
    }

    fn is_new(&self, v: &Value, other: Option<&Value>, path: &str) -> bool {
        let field = path.rsplit('.').next().unwrap_or(path);
        if self.given.get(field) == Some(v) {
            return false;
        }
        match other {
            Some(o) => o != v,
            // The later run failed (a window closing within the minute): an instant of the
            // write's own time is then the only sign.
            None => v
                .as_str()
                .filter(|s| s.len() >= 20 && s.as_bytes().get(10) == Some(&b'T'))
                .and_then(crate::time::parse_rfc3339)
                .is_some_and(|t| (self.window.0..=self.window.1).contains(&t)),
        }
    }
}

pub(super) fn join(path: &str, key: &str) -> String {
    if path.is_empty() {
        key.to_string()
    } else {
        format!("{path}.{key}")
    }
}

/// The fields the write changes on the target, as it answered them: the fields asked for first,
/// then what follows from them (a `state`), then what the confirmation sets (`null`, marked so).
pub(super) fn field_differences(
    current: &Value,
    after: &Value,
    set: &[String],
    asked: &Map<String, Value>,
) -> Vec<Difference> {
    let Some(fields) = after.as_object() else {
        return Vec::new();
    };
    let mut out: Vec<(u8, Difference)> = fields
        .iter()
        .filter_map(|(k, v)| {
            let now = current.get(k.as_str()).unwrap_or(&Value::Null);
            if set.iter().any(|p| p == k) {
                return Some((2, Difference::set_at_confirmation(k, now.clone())));
            }
            let rank = if asked.contains_key(k) { 0 } else { 1 };
            (now != v).then(|| (rank, Difference::new(k, now.clone(), v.clone())))
        })
        .collect();
    out.sort_by_key(|(rank, _)| *rank);
    out.into_iter().map(|(_, d)| d).collect()
}

/// Sets the value at a path of [`Settle::walk`]'s form (`charge.id`, `attempts[1].at`) to `null`,
/// if it is there.
pub(super) fn blank(v: &mut Value, path: &str) {
    let mut cur = v;
    for part in path.split('.') {
        let (key, index) = match part.split_once('[') {
            Some((k, i)) => (k, i.trim_end_matches(']').parse::<usize>().ok()),
            None => (part, None),
        };
        let next = if key.is_empty() {
            Some(cur)
        } else {
            cur.get_mut(key)
        };
        let Some(next) = next else { return };
        cur = match index {
            Some(i) => match next.get_mut(i) {
                Some(x) => x,
                None => return,
            },
            None => next,
        };
    }
    *cur = Value::Null;
}

/// The paths at which two values differ (an object's members, an array's items when both have
/// as many; otherwise the value as a whole), in the form [`blank`] takes.
pub(super) fn differing_paths(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) if x.len() == y.len() => {
            for (k, v) in x {
                match y.get(k) {
                    Some(w) => differing_paths(v, w, &join(path, k), out),
                    None => push_once(out, join(path, k)),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (v, w)) in x.iter().zip(y).enumerate() {
                differing_paths(v, w, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => push_once(out, path.to_string()),
        _ => {}
    }
}

fn push_once(out: &mut Vec<String>, path: String) {
    if !out.contains(&path) {
        out.push(path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_what_differs_and_blank_it() {
        let a = json!({"url": "https://x/?token=abc", "n": 1, "list": ["a", "b"], "o": {"k": "s"}});
        let b = json!({"url": "https://x/?token=[REDACTED]", "n": 1, "list": ["a", "c"], "o": {"k": "t"}});
        let mut out = Vec::new();
        differing_paths(&a, &b, "", &mut out);
        assert_eq!(out, ["url", "list[1]", "o.k"]);
        let mut v = a.clone();
        for p in &out {
            blank(&mut v, p);
        }
        assert_eq!(
            v,
            json!({"url": null, "n": 1, "list": ["a", null], "o": {"k": null}})
        );
        // A path that is not there changes nothing.
        blank(&mut v, "missing.deep[3]");
        blank(&mut v, "list[7]");
        assert_eq!(v["n"], 1);
    }
}
