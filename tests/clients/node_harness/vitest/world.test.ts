// Under vitest: the world scenarios, in a TypeScript spec as a customer writes one.
import { test } from 'vitest';
import { signage } from 'signage-sandbox/vitest';
import { world } from '../scenarios.js';

for (const [name, scenario] of Object.entries(world)) test(name, () => scenario(signage));
