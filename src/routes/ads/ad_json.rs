//! An ad as the list page writes it: rendered once per generation of the ads
//! ([`crate::routes::rendered`]), with `on_air`, the one member that depends on the request's
//! clock, judged per request from the ad's kept [`Run`] (as `ad_runs` resolved it when the row was
//! rendered; [`Run::plays_at`] is the rest of the one rule). Byte for byte the JSON of [`Ad`]'s
//! `Serialize` (a test holds the two equal, and debug builds compare every row served).

use super::ad::Ad;
use crate::json_write as w;
use crate::routes::on_air::Run;

/// An ad's JSON with `on_air`'s value cut out.
pub struct AdJson {
    /// `{"id":…,"ends_at":…,"on_air":` | `,"device_ids":[…],…}`.
    json: Box<[u8]>,
    on_air_at: usize,
    run: Run,
}

impl AdJson {
    pub(super) fn render(ad: &Ad) -> AdJson {
        let mut out = Vec::with_capacity(512);
        out.push(b'{');
        w::key(&mut out, "id");
        w::plain(&mut out, &ad.id);
        out.push(b',');
        w::key(&mut out, "object");
        w::plain(&mut out, ad.object);
        out.push(b',');
        w::key(&mut out, "company_id");
        w::plain(&mut out, &ad.company_id);
        out.push(b',');
        w::key(&mut out, "name");
        w::text(&mut out, &ad.name);
        out.push(b',');
        w::key(&mut out, "headline");
        w::text(&mut out, &ad.headline);
        out.push(b',');
        w::key(&mut out, "status");
        w::text(&mut out, &ad.status);
        out.push(b',');
        w::key(&mut out, "media_id");
        w::opt_text(&mut out, ad.media_id.as_deref());
        out.push(b',');
        w::key(&mut out, "promotion_id");
        w::opt_text(&mut out, ad.promotion_id.as_deref());
        out.push(b',');
        w::key(&mut out, "duration_seconds");
        w::int(&mut out, ad.duration_seconds);
        out.push(b',');
        w::key(&mut out, "starts_at");
        w::opt_time(&mut out, ad.starts_at.map(|t| t.0));
        out.push(b',');
        w::key(&mut out, "ends_at");
        w::opt_time(&mut out, ad.ends_at.map(|t| t.0));
        out.push(b',');
        w::key(&mut out, "on_air");
        let on_air_at = out.len();
        out.push(b',');
        w::key(&mut out, "device_ids");
        out.push(b'[');
        for (i, id) in ad.device_ids.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            w::text(&mut out, id);
        }
        out.extend_from_slice(b"],");
        w::key(&mut out, "device_count");
        w::int(&mut out, ad.device_count);
        out.push(b',');
        w::key(&mut out, "created_at");
        w::time(&mut out, ad.created_at.0);
        out.push(b',');
        w::key(&mut out, "updated_at");
        w::time(&mut out, ad.updated_at.0);
        out.push(b'}');
        AdJson {
            json: out.into_boxed_slice(),
            on_air_at,
            run: ad.run,
        }
    }

    pub(super) fn len(&self) -> usize {
        self.json.len() + 5
    }

    /// The ad's JSON at `now`.
    pub(super) fn write(&self, out: &mut Vec<u8>, now: i64) {
        out.extend_from_slice(&self.json[..self.on_air_at]);
        out.extend_from_slice(if self.run.plays_at(now) {
            b"true"
        } else {
            b"false"
        });
        out.extend_from_slice(&self.json[self.on_air_at..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::crud::Time;

    fn ad(text: &str, run: Run, now: i64, odd: bool) -> Ad {
        Ad {
            id: "ad_0m5d4ruo5fepbn59k9ts".into(),
            object: "ad",
            company_id: "cmp_0m5d4ruo5fepbn59k9ts".into(),
            name: format!("Spring {text}"),
            headline: text.into(),
            status: if odd { "paused" } else { "active" }.into(),
            media_id: odd.then(|| "med_0m5d4ruo5fepbn59k9ts".into()),
            promotion_id: (!odd).then(|| "prm_0m5d4ruo5fepbn59k9ts".into()),
            duration_seconds: if odd { 3600 } else { 1 },
            starts_at: odd.then_some(Time(1_772_000_000)),
            ends_at: (!odd).then_some(Time(253_402_300_800)),
            on_air: run.plays_at(now),
            device_ids: if odd {
                Vec::new()
            } else {
                vec![
                    "dev_0m5d4ruo5fepbn59k9ts".into(),
                    "dev_0m5d4ruo5fepbn59k9tt".into(),
                ]
            },
            device_count: if odd { 0 } else { 2 },
            created_at: Time(if odd { -62_167_219_201 } else { 1_700_000_000 }),
            updated_at: Time(if odd { 253_402_300_800 } else { 1_772_442_000 }),
            version: 7,
            run,
        }
    }

    #[test]
    fn a_written_ad_is_its_serialized_json_at_every_instant() {
        let texts = [
            "",
            "Hall 2",
            "Café \"A\" \\ 北京",
            "tab\there\nnew",
            "\u{1}\u{7f}\u{2028}",
        ];
        let runs = [
            Run {
                switched_on: true,
                from: None,
                until: None,
            },
            Run {
                switched_on: false,
                from: None,
                until: None,
            },
            Run {
                switched_on: true,
                from: Some(1_772_442_000),
                until: Some(1_772_442_300),
            },
        ];
        for now in [1_772_441_999, 1_772_442_000, 1_772_442_299, 1_772_442_300] {
            for text in texts {
                for run in runs {
                    for odd in [false, true] {
                        // Rendered at one instant, written at another: only `on_air` moves.
                        let kept = AdJson::render(&ad(text, run, 0, odd));
                        let mut out = Vec::new();
                        kept.write(&mut out, now);
                        let expected = serde_json::to_vec(&ad(text, run, now, odd)).unwrap();
                        assert_eq!(
                            String::from_utf8_lossy(&out),
                            String::from_utf8_lossy(&expected)
                        );
                    }
                }
            }
        }
    }
}
