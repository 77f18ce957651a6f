//! A device as list pages write it: rendered once per generation of the devices
//! ([`crate::routes::rendered`]), with the two members that depend on the request's clock
//! (`status`, `seconds_since_heartbeat`) filled in per request. Rendered by [`Device`]'s own
//! `Serialize`, those two values cut out ([`w::cut_members`]): no second list of its members.

use super::device::{status_of, Clock, Device};
use crate::json_write as w;

/// A device's JSON with the clock's two members cut out.
pub struct DeviceJson {
    /// `{"id":…,"resolution":…,"status":` | `,"last_heartbeat_at":…,"seconds_since_heartbeat":` |
    /// `,"current_ad_id":…}`.
    json: Box<[u8]>,
    status_at: usize,
    seconds_at: usize,
    last_heartbeat: Option<i64>,
}

impl DeviceJson {
    /// `d` as its `Serialize` writes it (the one description of a device's JSON), with the
    /// clock's members cut out; `None` only if that JSON lacked them.
    pub(super) fn render(d: &Device) -> Option<DeviceJson> {
        let json = serde_json::to_vec(d).ok()?;
        let (json, at) = w::cut_members(&json, &["status", "seconds_since_heartbeat"])?;
        Some(DeviceJson {
            json: json.into_boxed_slice(),
            status_at: at[0],
            seconds_at: at[1],
            last_heartbeat: d.last_heartbeat_at.map(|t| t.0),
        })
    }

    pub(super) fn len(&self) -> usize {
        self.json.len() + 32
    }

    /// The device's JSON at `clock`.
    pub(super) fn write(&self, out: &mut Vec<u8>, clock: Clock) {
        out.extend_from_slice(&self.json[..self.status_at]);
        w::plain(
            out,
            status_of(self.last_heartbeat, clock.now, clock.offline_after),
        );
        out.extend_from_slice(&self.json[self.status_at..self.seconds_at]);
        w::opt_int(out, self.last_heartbeat.map(|t| (clock.now - t).max(0)));
        out.extend_from_slice(&self.json[self.seconds_at..]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::routes::crud::Time;
    use std::borrow::Cow;

    fn device(text: &str, last: Option<i64>, clock: Clock, odd: bool) -> Device {
        Device {
            id: "dev_0m5d4ruo5fepbn59k9ts".into(),
            object: "device",
            company_id: "cmp_0m5d4ruo5fepbn59k9ts".into(),
            name: format!("Lobby {text}"),
            location: text.into(),
            platform: if odd {
                Cow::Owned("linux".into())
            } else {
                Cow::Borrowed("tizen")
            },
            orientation: Cow::Borrowed("portrait"),
            resolution: if odd { text.into() } else { "1920x1080".into() },
            status: status_of(last, clock.now, clock.offline_after),
            last_heartbeat_at: last.map(Time),
            seconds_since_heartbeat: last.map(|t| (clock.now - t).max(0)),
            current_ad_id: odd.then(|| "ad_0m5d4ruo5fepbn59k9ts".into()),
            app_version: odd.then(|| text.to_string()),
            assigned_ad_count: if odd { -3 } else { 12 },
            created_at: Time(if odd { -62_167_219_201 } else { 1_700_000_000 }),
            updated_at: Time(if odd { 253_402_300_800 } else { 1_772_442_000 }),
            version: 7,
        }
    }

    #[test]
    fn a_written_device_is_its_serialized_json_at_every_clock() {
        let texts = [
            "",
            "Hall 2",
            "Café \"A\" \\ 北京",
            "tab\there\nnew",
            "\u{1}\u{7f}\u{2028}",
        ];
        let lasts = [
            None,
            Some(1_772_441_990),
            Some(1_772_000_000),
            Some(1_772_442_100),
        ];
        for now in [1_772_442_000, 1_772_442_000 + 299, 1_772_442_000 + 301] {
            let clock = Clock {
                now,
                offline_after: 300,
            };
            for text in texts {
                for last in lasts {
                    for odd in [false, true] {
                        // Rendered at one clock, written at another: only the clock's members move.
                        let kept = DeviceJson::render(&device(
                            text,
                            last,
                            Clock {
                                now: 0,
                                offline_after: 1,
                            },
                            odd,
                        ))
                        .unwrap();
                        let mut out = Vec::new();
                        kept.write(&mut out, clock);
                        let expected = serde_json::to_vec(&device(text, last, clock, odd)).unwrap();
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
