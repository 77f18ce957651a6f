// Under jest: the world scenarios.
const { signage } = require('signage-sandbox/jest');
const { world } = require('../scenarios.js');

for (const [name, scenario] of Object.entries(world)) test(name, () => scenario(signage));
