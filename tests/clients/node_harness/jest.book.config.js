// The book's jest example, with the book's config (the preset).
module.exports = { preset: 'signage-sandbox', testMatch: ['<rootDir>/book/*.test.js'], cacheDirectory: '<rootDir>/.jest-cache' };
