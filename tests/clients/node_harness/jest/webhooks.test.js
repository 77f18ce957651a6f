const { signage } = require('signage-sandbox/jest');
const { webhooks } = require('../scenarios.js');

for (const [name, scenario] of Object.entries(webhooks)) test(name, () => scenario(signage));
