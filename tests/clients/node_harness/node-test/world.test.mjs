// Under node:test (run through `signage-sandbox run -- node --test`): the world scenarios.
import { test } from 'node:test';
import { signage } from 'signage-sandbox/node-test';
import scenarios from '../scenarios.js';

for (const [name, scenario] of Object.entries(scenarios.world)) test(name, () => scenario(signage));
