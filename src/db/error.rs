//! [`DbError`], the one error of storage. A leaf: it imports no other file of `db`, and every one
//! of them returns it.

#[derive(Debug, thiserror::Error)]
pub enum DbError {
    #[error("sqlite: {0}")]
    Sqlite(#[from] rusqlite::Error),
    #[error("migration failed: {0}")]
    Migration(String),
    #[error("fixtures: {0}")]
    Fixtures(String),
}
