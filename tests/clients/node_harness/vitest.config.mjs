import { defineConfig } from 'vitest/config';
import { signageSandbox } from 'signage-sandbox/vitest';

export default defineConfig({
  test: {
    include: ['vitest/**/*.test.ts'],
    // Worker threads here; the book's example runs in vitest's default pool (forks).
    pool: 'threads',
    maxWorkers: 2,
    ...signageSandbox({ readiness: 'reports/vitest-readiness.xml' }),
  },
});
