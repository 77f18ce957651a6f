'use strict';
// The one Sandbox of a test file, kept on the global object: a runner may load this package
// twice in one file (its setup file and the test file resolved apart), and both must see the
// same server and the same test scope.
const { Sandbox } = require('./sandbox.js');

const KEY = Symbol.for('signage-sandbox.sandbox');

function sharedSandbox() {
  if (!globalThis[KEY]) globalThis[KEY] = new Sandbox();
  return globalThis[KEY];
}

module.exports = { sharedSandbox };
