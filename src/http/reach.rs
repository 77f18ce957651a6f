//! Whose rows a list may hold ([`Reach`]): some companies, or every company of an account. Lists
//! of a whole account read an index by account where their table has one, so a page costs the
//! same whether the account has 2 companies or 100 ([`crate::routes::queries::fetch_page`]).

use std::sync::Arc;

/// The companies a list may show rows of, ascending by id, and the account when they are all of
/// its companies (no `company_id` filter, a credential not limited to one company).
#[derive(Clone, Debug)]
pub struct Reach {
    companies: Arc<[String]>,
    account: Option<String>,
}

impl Reach {
    /// Exactly these companies.
    pub fn companies(companies: Arc<[String]>) -> Reach {
        Reach {
            companies,
            account: None,
        }
    }

    /// Every company of `account`, which are `companies`.
    pub fn account(account: &str, companies: Arc<[String]>) -> Reach {
        Reach {
            companies,
            account: Some(account.to_string()),
        }
    }

    /// The account whose every company the list reaches, if it does.
    pub fn whole_account(&self) -> Option<&str> {
        self.account.as_deref()
    }
}

impl std::ops::Deref for Reach {
    type Target = [String];

    fn deref(&self) -> &[String] {
        &self.companies
    }
}

impl<'a> IntoIterator for &'a Reach {
    type Item = &'a String;
    type IntoIter = std::slice::Iter<'a, String>;

    fn into_iter(self) -> Self::IntoIter {
        self.companies.iter()
    }
}
