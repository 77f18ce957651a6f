'use strict';
// `preset: 'signage-sandbox'` in a jest config: the global setup and teardown and the setup
// file of signage-sandbox/jest (settings from SIGNAGE_SANDBOX_*).
module.exports = require('./jest/index.js').files;
