//! The area registry (`signage::areas`) and the route registry (`signage::routes::MODULES`) agree
//! with the code: every area has one module of routes, every route of an area lives under the
//! area's paths and asks for the area's scope, and every fixture table belongs to one area (or to
//! the platform). Adding an area without its registry line, or a table without its owner, fails
//! here; so does an area left out of the lists that cannot read the registry (the payload
//! catalogue, the OpenAPI tags, the account reset's owner paths, the console's navigation).

use signage::areas::{Area, ConsoleView, PLATFORM_TABLES};
use signage::auth::Action;
use signage::routes::MODULES;

#[test]
fn every_area_has_exactly_one_module_of_routes() {
    for area in Area::ALL {
        let modules: Vec<&str> = MODULES
            .iter()
            .filter(|m| m.area == Some(*area))
            .map(|m| m.name)
            .collect();
        assert_eq!(modules.len(), 1, "{area:?} is served by {modules:?}");
    }
}

#[test]
fn an_areas_routes_live_under_its_paths_and_ask_for_its_scope() {
    for m in MODULES {
        for route in (m.routes)() {
            let first = route
                .path
                .trim_start_matches('/')
                .split('/')
                .next()
                .unwrap_or("");
            let by_path = Area::of_path_segment(first);
            let by_action = match route.action {
                Action::Use(area, _) => Some(area),
                _ => None,
            };
            if let Some(area) = m.area {
                assert_eq!(
                    by_path,
                    Some(area),
                    "{} {} in {}",
                    route.method,
                    route.path,
                    m.name
                );
            }
            if let Some(area) = by_action {
                assert_eq!(
                    m.area,
                    Some(area),
                    "{} {} asks for {area:?} but lives in {}",
                    route.method,
                    route.path,
                    m.name
                );
            }
        }
    }
}

#[test]
fn every_fixture_table_belongs_to_one_area_or_the_platform() {
    let tables = signage::db::fixtures::table_order().expect("fixtures parse");
    let owner = |t: &str| -> Vec<String> {
        let mut owners: Vec<String> = Area::ALL
            .iter()
            .filter(|a| a.spec().tables.contains(&t))
            .map(|a| a.name().to_string())
            .collect();
        if PLATFORM_TABLES.contains(&t) {
            owners.push("platform".into());
        }
        owners
    };
    for t in &tables {
        assert_eq!(
            owner(t).len(),
            1,
            "fixture table {t} is owned by {:?}",
            owner(t)
        );
    }
    for t in Area::ALL
        .iter()
        .flat_map(|a| a.spec().tables)
        .chain(PLATFORM_TABLES)
    {
        assert!(
            tables.iter().any(|x| x == t),
            "{t} is declared but has no fixtures"
        );
    }
}

#[test]
fn scope_names_and_event_types_come_from_the_registry() {
    let names = signage::auth::scopes::Scope::all_names();
    for area in Area::ALL {
        assert!(names.contains(&format!("{}:read", area.name())));
        assert_eq!(
            names.contains(&format!("{}:write", area.name())),
            area.has_write()
        );
    }
    let declared: Vec<&str> = Area::ALL
        .iter()
        .flat_map(|a| a.spec().events)
        .copied()
        .collect();
    assert_eq!(signage::events::EVENT_TYPES, declared.as_slice());
}

/// Each event type an area declares has exactly one entry in the payload catalogue
/// (`routes::payloads()`, which gathers the `payloads` of every module of `MODULES`), and no
/// entry is of an undeclared type. An area whose module line leaves out its `payloads()` fails
/// here, naming its event types.
#[test]
fn every_event_type_has_exactly_one_payload_entry() {
    let catalogue: Vec<&str> = signage::routes::payloads()
        .entries()
        .iter()
        .map(|p| p.event_type)
        .collect();
    for area in Area::ALL {
        let missing: Vec<&&str> = area
            .spec()
            .events
            .iter()
            .filter(|e| catalogue.iter().filter(|c| c == e).count() != 1)
            .collect();
        assert!(
            missing.is_empty(),
            "{area:?}: event types without exactly one payload entry (give its line of \
             `routes::MODULES` `.with_payloads({}::payloads)`): {missing:?}",
            area.name()
        );
    }
    assert_eq!(catalogue, signage::events::EVENT_TYPES);
}

/// The sandbox's event triggers and the documentation's examples find a payload's object through
/// its subject's declaration (`payload::SubjectKind`, beside the area's entries): its `table`
/// and `company` must be SQL over the schema that finds objects of its kind, and every entry of a
/// kind must name the same declaration (one `resource_type`, one table per kind).
#[test]
fn every_payload_subject_kind_has_a_table() {
    use rusqlite::OptionalExtension;
    let catalogue = signage::routes::payloads().entries();
    for p in catalogue {
        let first = catalogue.iter().find(|q| q.subject.kind == p.subject.kind);
        assert_eq!(
            first.map(|q| q.subject),
            Some(p.subject),
            "{}: another entry declares kind {:?} otherwise",
            p.event_type,
            p.subject.kind
        );
    }
    let clock = std::sync::Arc::new(signage::time::Clock::frozen_at(
        signage::routes::payloads::EXAMPLE_AT,
    ));
    let (db, _) = signage::db::Db::open(":memory:", true, clock, None).unwrap();
    let intent = signage::db::WriteIntent::sandbox();
    db.write(&intent, |tx| {
        for p in catalogue {
            let (kind, table, company) = (p.subject.kind, p.subject.table, p.subject.company);
            let sql = format!(
                "SELECT o.id, {company} FROM {table} WHERE ({}) LIMIT 1",
                p.pick
            );
            let found: Option<(String, String)> = tx
                .query_row(&sql, [], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()
                .unwrap_or_else(|e| {
                    panic!(
                        "{}: the table `{table}` or company `{company}` of its subject kind \
                         {kind:?} is not SQL over the schema: {e}",
                        p.event_type
                    )
                });
            if let Some((id, _)) = found {
                assert!(
                    id.starts_with(&format!("{}_", kind.prefix())),
                    "{}: the table `{table}` of subject kind {kind:?} holds `{id}`",
                    p.event_type
                );
            }
        }
        Ok::<_, signage::db::DbError>(())
    })
    .unwrap();
}

/// An area's routes carry the area's name as their OpenAPI tag, and the document declares it
/// (`openapi::tag_list()`, with the area's description).
#[test]
fn every_area_has_its_tag_on_its_routes_and_in_the_document() {
    let declared = signage::routes::openapi::tag_list();
    for m in MODULES {
        let Some(area) = m.area else { continue };
        assert!(
            declared
                .iter()
                .any(|(t, d)| *t == area.name() && !d.is_empty()),
            "{area:?} has no described tag in openapi::tag_list()"
        );
        for route in (m.routes)() {
            assert_eq!(
                route.tag,
                area.name(),
                "{} {} in {}",
                route.method,
                route.path,
                m.name
            );
        }
    }
}

/// The console's navigation (`src/routes/console/assets/console.js`, `nav`) lists its views as
/// `[sub-path, label, area]`, shown when the credential may read the area. Every area named there
/// exists, and every area has a view or says why not in its registry entry
/// (`console_view: ConsoleView::Without(why)`): a new area is not left out of the console unnoticed.
#[test]
fn every_area_has_a_console_view_or_a_reason() {
    let script = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/src/routes/console/assets/console.js"
    ))
    .expect("console.js");
    let start = script
        .find("for (const [sub, label, area] of [")
        .expect("the navigation's list of views");
    let list = &script[start..];
    let list = &list[..list.find("]]) {").expect("the list's end")];
    let named: Vec<&str> = list
        .split('[')
        .skip(2)
        .filter_map(|entry| entry.split('"').nth(5))
        .collect();
    let shown = Area::ALL
        .iter()
        .filter(|a| a.spec().console_view == ConsoleView::Shown)
        .count();
    assert!(named.len() >= shown, "{named:?}");
    for name in &named {
        assert!(
            Area::ALL.iter().any(|a| a.name() == *name),
            "the console names area {name}, which the registry does not declare"
        );
    }
    for area in Area::ALL {
        let shown = named.contains(&area.name());
        match area.spec().console_view {
            ConsoleView::Shown => assert!(
                shown,
                "{area:?}: its registry entry says `ConsoleView::Shown`, but the console's \
                 navigation has no view of it (add one, or say why not with \
                 `ConsoleView::Without(\"…\")` in src/areas.rs)"
            ),
            ConsoleView::Without(why) => {
                assert!(
                    !shown,
                    "{area:?}: the console's navigation has a view of it, but its registry entry \
                     says `ConsoleView::Without`: make it `ConsoleView::Shown`"
                );
                assert!(
                    why.len() > 10,
                    "{area:?}: `ConsoleView::Without({why:?})` needs a real reason"
                );
            }
        }
    }
}
