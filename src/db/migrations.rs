//! The schema migrations embedded in the binary (`schema/`), and the highest of them. A leaf: it
//! imports no other file of `db`; the pool runs them, snapshots record the version.

mod embedded {
    refinery::embed_migrations!("schema");
}

/// A runner of every migration this binary carries.
pub(super) fn runner() -> refinery::Runner {
    embedded::migrations::runner()
}

/// The highest schema migration this binary carries.
pub fn latest_migration() -> i64 {
    latest_migration_of(&runner())
}

pub(super) fn latest_migration_of(runner: &refinery::Runner) -> i64 {
    runner
        .get_migrations()
        .iter()
        .map(|m| i64::from(m.version()))
        .max()
        .unwrap_or(0)
}
