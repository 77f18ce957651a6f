// The book's vitest example, with the book's config (no report).
import { defineConfig } from 'vitest/config';
import { signageSandbox } from 'signage-sandbox/vitest';

export default defineConfig({ test: { include: ['book/*.test.ts'], ...signageSandbox() } });
