import { test } from 'vitest';
import { signage } from 'signage-sandbox/vitest';
import { webhooks } from '../scenarios.js';

for (const [name, scenario] of Object.entries(webhooks)) test(name, () => scenario(signage));
