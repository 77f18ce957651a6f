// `preset: 'signage-sandbox'` is the whole setup; the report's path comes from
// SIGNAGE_SANDBOX_READINESS (run.sh sets it, as a CI job would).
module.exports = {
  preset: 'signage-sandbox',
  testMatch: ['<rootDir>/jest/**/*.test.js'],
  // A fresh cache: with the timings of an earlier run, jest runs a fast suite in one process.
  cacheDirectory: '<rootDir>/.jest-cache',
};
