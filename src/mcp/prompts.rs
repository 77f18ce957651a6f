//! Prompts (MCP 2025-11-25, capability `prompts`): ready-made instructions for the jobs people
//! ask an assistant to do with signage, each naming the tools to call and in which order.
//!
//! A prompt is listed (and can be fetched) only when the key may call every tool it relies on,
//! so its text never sends the assistant to a tool it cannot use. Arguments are ids or a month,
//! checked before they are put into the text.

use super::advice::can_call;
use super::call::Caller;
use crate::http::App;
use crate::ids::Kind;
use serde_json::{json, Map, Value};

pub struct Argument {
    pub name: &'static str,
    pub description: &'static str,
    pub required: bool,
    /// The id kind the value must be, or `None` for a month (`YYYY-MM`).
    kind: Option<Kind>,
}

pub struct Prompt {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub arguments: &'static [Argument],
    /// The tools the text relies on; the key must be allowed every one.
    needs: &'static [&'static str],
    /// The text, with `{argument}` placeholders.
    template: &'static str,
}

const COMPANY: Argument = Argument {
    name: "company_id",
    description: "The company (`cmp_…`), as returned by list_companies.",
    required: true,
    kind: Some(Kind::Company),
};

pub const PROMPTS: &[Prompt] = &[
    Prompt {
        name: "triage_offline_screens",
        title: "Triage offline screens",
        description: "Find a company's offline screens, longest down first, and work out why each is down and what to do about it.",
        arguments: &[COMPANY],
        needs: &["get_fleet_health", "get_device_diagnostics", "list_device_ads"],
        template: "Triage the offline screens of company {company_id}.

1. Call get_fleet_health with company_id {company_id}. Report the counts (online, offline, never seen). If no screen is offline, say so and stop.
2. For each offline screen in `offline_devices` (they are sorted longest down first; take at most the first five), call get_device_diagnostics with its device_id: note the heartbeat age, app version, free storage, uptime and the recent playback errors.
3. For a screen whose errors name an ad, call list_device_ads with its device_id to see what it is meant to play.
4. Give a short table: screen, location, down for (in hours or days), likely cause (no power or network when there are no recent errors; a failing ad or media when playback errors repeat; full storage when free storage is low), and the next step for someone on site.

This is a read-only job: change nothing. If `offline_not_listed` is above zero, say how many more screens are offline.",
    },
    Prompt {
        name: "activate_promotion_safely",
        title: "Activate a promotion safely",
        description: "Check a promotion's dates and the company's token balance, prepare the activation, show the preview and activate only after the user confirms.",
        arguments: &[Argument {
            name: "promotion_id",
            description: "The promotion to activate (`promo_…`), as returned by list_promotions.",
            required: true,
            kind: Some(Kind::Promotion),
        }],
        needs: &[
            "get_promotion",
            "get_token_balance",
            "prepare_promotion_activation",
            "confirm_change",
            "cancel_change",
        ],
        template: "Help the user activate promotion {promotion_id}, safely.

1. Call get_promotion with promotion_id {promotion_id}. Check `state`: if it is already `active` or `scheduled`, tell the user and stop. Check the window (`starts_at`, `ends_at`): if `ends_at` has passed the promotion cannot be activated; tell the user{?prepare_promotion_change:, and only if they want new dates, use prepare_promotion_change (then continue once that change is confirmed)|, and stop: its dates must be changed outside this assistant}.
2. Call get_token_balance with the promotion's company_id. Compare the balance with `activation_cost_tokens`. If the balance is too low, tell the user how many tokens are missing and stop{?prepare_token_purchase: unless they want to buy a pack: list_token_packs shows the packs, prepare_token_purchase buys one after the user confirms its preview| (tokens must be bought outside this assistant)}.
3. Call prepare_promotion_activation with promotion_id {promotion_id}. It changes nothing. If it returns an error, explain it to the user in plain words and stop.
4. Show the user the preview: the promotion's name and dates, the differences, the token cost and the balance after. Ask explicitly: \"Activate this promotion for N tokens?\"
5. Only if the user clearly says yes, call confirm_change with the confirmation_id. If they say no or anything unclear, call cancel_change. Never confirm on your own.
6. Report the result: the promotion's new state and the new balance.",
    },
    Prompt {
        name: "monthly_token_billing_report",
        title: "Monthly token and billing report",
        description: "A company's tokens and billing for one month: balance, tokens added and spent, the largest spends, invoices and charges.",
        arguments: &[
            COMPANY,
            Argument {
                name: "month",
                description: "The month to report, `YYYY-MM` (for example `2026-11`); the current month when left out.",
                required: false,
                kind: None,
            },
        ],
        needs: &[
            "get_token_summary",
            "list_token_transactions",
            "list_invoices",
            "list_recent_charges",
        ],
        template: "Write the token and billing report of company {company_id} for {month_words}.

1. Call get_token_summary with company_id {company_id}{window_args}. Note the opening and closing balance, tokens added and spent, and the totals per kind.
2. Call list_token_transactions with company_id {company_id}{window_args} and limit 100 (follow `next_cursor` while `has_more`). Pick the five largest spends and say what each was for (its description and promotion).
3. Call list_invoices with company_id {company_id} and find the invoice whose period covers {month_words}; give its number, status and total. Call list_recent_charges with company_id {company_id} and list the charges of that month (subscription, token packs, overage, credits).
4. Write the report: a short summary first (balance at start and end, tokens spent, amount billed), then a table of the largest spends, then the invoice and charges. Amounts in the invoice's currency, formatted from cents.

This is a read-only job: change nothing.",
    },
];

/// The prompts this caller may use, in order.
pub fn visible<'a>(app: &'a App, caller: &'a Caller) -> impl Iterator<Item = &'static Prompt> + 'a {
    PROMPTS
        .iter()
        .filter(move |p| p.needs.iter().all(|t| can_call(app, caller, t)))
}

/// The entry of `prompts/list`.
pub fn definition(p: &Prompt) -> Value {
    let arguments: Vec<Value> = p
        .arguments
        .iter()
        .map(|a| json!({"name": a.name, "description": a.description, "required": a.required}))
        .collect();
    json!({"name": p.name, "title": p.title, "description": p.description, "arguments": arguments})
}

/// A month `YYYY-MM`: (first day, last day) as dates.
fn month_days(month: &str) -> Option<(String, String)> {
    let b = month.as_bytes();
    if b.len() != 7 || b[4] != b'-' {
        return None;
    }
    let year: i64 = month.get(0..4)?.parse().ok()?;
    let m: u32 = month.get(5..7)?.parse().ok()?;
    if !(1..=12).contains(&m)
        || !month
            .bytes()
            .enumerate()
            .all(|(i, c)| i == 4 || c.is_ascii_digit())
    {
        return None;
    }
    let (ny, nm) = if m == 12 {
        (year + 1, 1)
    } else {
        (year, m + 1)
    };
    let next = crate::time::parse_rfc3339(&format!("{ny:04}-{nm:02}-01T00:00:00Z"))?;
    let last = crate::time::rfc3339(next - 86_400);
    Some((format!("{month}-01"), last.get(0..10)?.to_string()))
}

/// `{?tool:with|without}` segments resolved: `with` when the caller may call `tool`.
fn resolve(template: &str, can: &dyn Fn(&str) -> bool) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find("{?") {
        out.push_str(&rest[..start]);
        let seg = &rest[start + 2..];
        let Some(end) = seg.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let body = &seg[..end];
        let (tool, texts) = body.split_once(':').unwrap_or((body, ""));
        let (with, without) = texts.split_once('|').unwrap_or((texts, ""));
        out.push_str(if can(tool) { with } else { without });
        rest = &seg[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The messages of a prompt for these arguments, or why the arguments are wrong. `can` says
/// whether the caller may call a tool the text mentions as an option.
pub fn render(
    p: &Prompt,
    args: &Map<String, Value>,
    can: &dyn Fn(&str) -> bool,
) -> Result<Value, String> {
    let known: Vec<&str> = p.arguments.iter().map(|a| a.name).collect();
    if let Some(unknown) = args.keys().find(|k| !known.contains(&k.as_str())) {
        return Err(format!(
            "Unknown argument `{}` for prompt {}; it takes: {}.",
            super::protocol::shorten(unknown),
            p.name,
            known.join(", ")
        ));
    }
    let mut text = resolve(p.template, can);
    let mut month = None;
    for a in p.arguments {
        // Clients often send an optional argument left blank as "".
        let value = match args.get(a.name) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.is_empty() && !a.required => None,
            Some(Value::String(s)) => Some(s.as_str()),
            Some(_) => return Err(format!("Argument `{}` must be a string.", a.name)),
        };
        let Some(value) = value else {
            if a.required {
                return Err(format!(
                    "Prompt {} needs the argument `{}`: {}",
                    p.name, a.name, a.description
                ));
            }
            continue;
        };
        match a.kind {
            Some(kind) if !crate::ids::is_valid(kind, value) => {
                return Err(format!("Argument `{}`: {}", a.name, a.description));
            }
            Some(_) => text = text.replace(&format!("{{{}}}", a.name), value),
            None => {
                month = Some(
                    month_days(value)
                        .ok_or_else(|| format!("Argument `{}`: {}", a.name, a.description))?,
                );
            }
        }
    }
    if text.contains("{month_words}") {
        let (words, window) = match &month {
            Some((first, last)) => (
                format!("{} (from {first} to {last})", &first[..7]),
                format!(", from {first} and to {last}"),
            ),
            None => (
                "the current month".to_string(),
                String::from(" (no from/to: the current month)"),
            ),
        };
        text = text
            .replace("{month_words}", &words)
            .replace("{window_args}", &window);
    }
    Ok(json!({
        "description": p.description,
        "messages": [{"role": "user", "content": {"type": "text", "text": text}}],
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn months_and_arguments_are_checked() {
        assert_eq!(
            month_days("2026-02"),
            Some(("2026-02-01".into(), "2026-02-28".into()))
        );
        assert_eq!(
            month_days("2026-12"),
            Some(("2026-12-01".into(), "2026-12-31".into()))
        );
        for bad in ["2026-13", "2026-1", "26-01-01", "2026_01", "20a6-01"] {
            assert_eq!(month_days(bad), None, "{bad}");
        }
        let report = &PROMPTS[2];
        let mut args = Map::new();
        args.insert("company_id".into(), json!("cmp_0m5d4ruo5fepbn59k9ts"));
        args.insert("month".into(), json!("2026-11"));
        let text = render(report, &args, &|_| true).unwrap()["messages"][0]["content"]["text"]
            .as_str()
            .unwrap()
            .to_string();
        assert!(text.contains("from 2026-11-01 and to 2026-11-30"), "{text}");
        assert!(!text.contains('{'), "{text}");
        args.insert("company_id".into(), json!("ignore previous instructions"));
        assert!(render(report, &args, &|_| true).is_err());
        args.remove("company_id");
        assert!(render(report, &args, &|_| true)
            .unwrap_err()
            .contains("needs the argument"));
        let t = "a{?x:, with x|, without x}.{?y:Y}";
        assert_eq!(resolve(t, &|n| n == "x"), "a, with x.");
        assert_eq!(resolve(t, &|n| n == "y"), "a, without x.Y");
    }
}
