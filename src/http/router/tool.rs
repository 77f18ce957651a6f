//! MCP tools, declared on the routes they call.

/// An MCP tool, declared on the route it reads or whose change it prepares. The MCP layer builds
/// its catalogue, input and output schemas from the route (the `mcp` module).
#[derive(Clone, Copy, Debug)]
pub struct Tool {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    /// The tool argument (and its description) that fills each path parameter, in order.
    pub path_args: &'static [(&'static str, &'static str)],
    /// `None`: a read, answered by the route. `Some`: a two-step write of this change, confirmed
    /// later with `confirm_change`; the target is read first with the GET route at the path up to
    /// the last path parameter.
    pub change: Option<Change>,
    /// The GET operation that reads a prepare tool's target, when the write's path has none
    /// (`POST /webhooks` reads the company, `getCompany`, with the first path argument).
    pub reads: Option<&'static str>,
    /// A field of the write's answer that MCP never shows (a secret shown once), and where the
    /// integrator reads it instead; the preview and the result say so.
    pub withholds: Option<Withheld>,
    /// For a prepare tool: the change in the words a person decides on ([`Tool::asking`]).
    pub ask: Option<&'static str>,
}

/// See [`Tool::withholds`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Withheld {
    pub field: &'static str,
    /// Where the value can be read, for the user; `{id}` stands for the object's id.
    pub note: &'static str,
}

/// What a prepare tool changes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Change {
    /// The caller gives new values for some of these fields of the route's JSON body (`changes`).
    Fields(&'static [&'static str]),
    /// The route sets this boolean field of the target (it takes no body).
    Sets(&'static str, bool),
    /// The route adds the value of the tool argument `.1` (sent as the JSON body `{".1": value}`,
    /// or in the path) to the target's array field `.0`, e.g. assigning a device to an ad.
    Adds(&'static str, &'static str),
    /// The route removes the value of the tool argument `.1` (a path parameter) from the
    /// target's array field `.0`.
    Removes(&'static str, &'static str),
    /// The route creates something for the value of the tool argument `.0` (sent as the JSON
    /// body `{".0": value}`), e.g. buying a token pack for a company; the preview shows what the
    /// write would return.
    Creates(&'static str),
    /// The caller gives these fields of the route's JSON body as arguments (required as the body
    /// schema says), or none for a route without a body; the preview is what the write returns.
    Body(&'static [&'static str]),
    /// The route deletes the target (and answers without a body).
    Deletes,
    /// Like [`Change::Body`], for a write on many items at once: its answer lists each item in
    /// the array `items`, named by `key`, with the boolean `flag` after the write and `changed`;
    /// the differences are the items that change.
    Batch {
        fields: &'static [&'static str],
        items: &'static str,
        key: &'static str,
        flag: &'static str,
    },
    /// An upload of a raw-body route: the caller gives the route's query parameters and the file
    /// inline (`content`, its `encoding` and `content_type`, one of the route's raw types), at
    /// most `max_bytes` once decoded; the preview is what the write returns.
    Upload { max_bytes: usize },
}

impl Tool {
    pub const fn read(
        name: &'static str,
        title: &'static str,
        path_args: &'static [(&'static str, &'static str)],
        description: &'static str,
    ) -> Tool {
        Tool {
            name,
            title,
            description,
            path_args,
            change: None,
            reads: None,
            withholds: None,
            ask: None,
        }
    }

    pub const fn prepare(
        name: &'static str,
        title: &'static str,
        path_args: &'static [(&'static str, &'static str)],
        change: Change,
        description: &'static str,
    ) -> Tool {
        Tool {
            name,
            title,
            description,
            path_args,
            change: Some(change),
            reads: None,
            withholds: None,
            ask: None,
        }
    }

    /// The change in words, for the question a person answers (an elicitation, the MCP App card):
    /// what it does to which objects of which company, and every side effect. `{target}` is the
    /// object the tool reads, `{company}` its company, `{name}` a tool argument (an id shown with
    /// its object's name). The MCP layer adds the differences, the cost and the balance.
    pub const fn asking(mut self, words: &'static str) -> Tool {
        self.ask = Some(words);
        self
    }

    /// See [`Tool::reads`].
    pub const fn reading(mut self, operation: &'static str) -> Tool {
        self.reads = Some(operation);
        self
    }

    /// See [`Tool::withholds`].
    pub const fn withholding(mut self, field: &'static str, note: &'static str) -> Tool {
        self.withholds = Some(Withheld { field, note });
        self
    }
}
