// Type-checked, not run (tsc --noEmit with strict): what a TypeScript customer writes against
// the harness's types, for each runner's handle and the shared pieces.
import { signage as underVitest, signageSandbox } from 'signage-sandbox/vitest';
import { signage as underNodeTest } from 'signage-sandbox/node-test';
import jest = require('signage-sandbox/jest');
import {
  combineReadiness,
  verifyWebhook,
  type Answer,
  type Delivery,
  type ReadinessReport,
  type Sandbox,
  SignageError,
} from 'signage-sandbox/harness';

interface Ad {
  id: string;
  name: string;
}

async function customer(signage: Sandbox): Promise<void> {
  const answer: Answer<Ad> = await signage.client('northwind-readwrite').post<Ad>('/ads', { name: 'Typed' });
  const id: string = answer.raiseForStatus().json.id;
  const count: number = await signage.countRequests({ operation_id: 'createAd', status: '5xx', faulted: true });
  const report: ReadinessReport = await signage.readiness();
  const verdict: 'ready' | 'not_ready' | 'incomplete' = report.verdict;
  const receiver = await signage.receiver();
  receiver.trust('whsec_c2VjcmV0');
  const deliveries: Delivery[] = await receiver.waitFor(1, { eventType: 'ad.created', timeoutMs: 5000 });
  const drill = await signage.operator.drill(deliveries[0].id, 'bad_signature');
  await signage.operator.advance({ seconds: 60, drain: true });
  await signage.operator.addFault({ type: 'status', status: 503 }, { match: { path: '/ads' }, times: 1 });
  const xml: string = await signage.operator.readinessJunit(signage.credentials['northwind-admin'].accountId);
  const combined: string = combineReadiness([xml, xml], { '1': 3 });
  void [id, count, verdict, drill.verdict, combined, verifyWebhook('whsec_c2VjcmV0', {}, '{}')];
  try {
    await signage.operator.restore('missing');
  } catch (err) {
    if (err instanceof SignageError) void err.code;
  }
}

const config: { globalSetup: string[]; setupFiles: string[] } = signageSandbox({ readiness: 'readiness.xml', seed: null });
void [customer(underVitest), customer(underNodeTest), customer(jest.signage), config, jest.signageSandbox({ clock: 'system' })];
