'use strict';
// What the current test is, for the journal: its name (sent as `Signage-Test-Name` by every
// Client) and the journal mark taken when it began (`after`), so that countRequests(),
// requests() and readiness() count this test's own requests although the journal outlives
// every restore. The runner integrations set both around each test; outside a test both stay
// unset and nothing is scoped.

const TEST_NAME_HEADER = 'Signage-Test-Name';

const current = { name: null, after: null };

function begin(name) {
  current.name = name;
  current.after = null;
}

function end() {
  current.name = null;
  current.after = null;
}

module.exports = { TEST_NAME_HEADER, current, begin, end };
