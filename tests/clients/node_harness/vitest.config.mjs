import { defineConfig } from 'vitest/config';
import { signageSandbox } from 'signage-sandbox/vitest';

export default defineConfig({
  test: {
    include: ['vitest/**/*.test.ts'],
    pool: 'forks',
    maxWorkers: 2,
    ...signageSandbox({ readiness: 'reports/vitest-readiness.xml' }),
  },
});
