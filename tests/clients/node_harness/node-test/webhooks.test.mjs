import { test } from 'node:test';
import { signage } from 'signage-sandbox/node-test';
import scenarios from '../scenarios.js';

for (const [name, scenario] of Object.entries(scenarios.webhooks)) test(name, () => scenario(signage));
