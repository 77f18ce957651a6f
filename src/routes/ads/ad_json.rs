//! An ad as the list page writes it: rendered once per generation of the ads
//! ([`crate::routes::rendered`]), with `on_air`, the one member that depends on the request's
//! clock, judged per request from the ad's kept [`Run`] (as `ad_runs` resolved it when the row was
//! rendered; [`Run::plays_at`] is the rest of the one rule). Rendered by [`Ad`]'s own `Serialize`,
//! `on_air`'s value cut out ([`w::cut_members`]): no second list of its members (debug builds
//! still compare every row served with the ad read again).

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
    /// `ad` as its `Serialize` writes it (the one description of an ad's JSON), with `on_air`'s
    /// value cut out; `None` only if that JSON lacked it.
    pub(super) fn render(ad: &Ad) -> Option<AdJson> {
        let json = serde_json::to_vec(ad).ok()?;
        let (json, at) = w::cut_members(&json, &["on_air"])?;
        Some(AdJson {
            json: json.into_boxed_slice(),
            on_air_at: at[0],
            run: ad.run,
        })
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
                        let kept = AdJson::render(&ad(text, run, 0, odd)).unwrap();
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
