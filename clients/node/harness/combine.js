'use strict';
// One readiness report from several: with parallel workers each worker has its own server, so
// each server's journal holds part of the run's evidence. The reports are combined check by
// check, judging all of the evidence together (as the pytest plugin's combine.py does):
// `fail` if any worker saw the misbehaviour, else `pass` if any saw the behaviour, else
// `not_observed`. The verdict follows as the server states it: `not_ready` when a required check
// fails, `incomplete` when one is not observed, else `ready`. Each check's <testcase> is copied
// as a server wrote it (its advice, rule and evidence); only the counts are rendered here.

const STRENGTH = ['fail', 'pass', 'not_observed'];
const CASE = /<testcase\b([^>]*?)(?:\/>|>([\s\S]*?)<\/testcase>)/g;

function attributes(text) {
  const out = {};
  for (const m of text.matchAll(/([\w:.-]+)="([^"]*)"/g)) out[m[1]] = m[2];
  return out;
}

// A <testcase>'s status as the server's JUnit states it.
function statusOf(inner) {
  const failure = /<failure\b([^>]*)/.exec(inner || '');
  if (failure) return attributes(failure[1]).type === 'fail' ? 'fail' : 'not_observed';
  const skipped = /<skipped\b([^>]*)/.exec(inner || '');
  if (skipped) return (attributes(skipped[1]).message || '').startsWith('failed') ? 'fail' : 'not_observed';
  return 'pass';
}

// The checks of one JUnit report: [{ name, classname, status, xml }] in its order.
function cases(xml) {
  return [...xml.matchAll(CASE)].map((m) => {
    const attrs = attributes(m[1]);
    return { name: attrs.name || '', classname: attrs.classname || '', status: statusOf(m[2]), xml: m[0] };
  });
}

function escape(text) {
  return String(text).replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/"/g, '&quot;');
}

// The JUnit XML of one report from several (each a server's readiness report as JUnit);
// `workers` names them (e.g. { '1': 42 }: a worker and how many requests its server journaled).
function combineReadiness(reports, workers = {}) {
  if (!reports.length) throw new Error('no report to combine');
  const order = [];
  const chosen = new Map();
  for (const xml of reports) {
    for (const c of cases(xml)) {
      const rank = STRENGTH.indexOf(c.status);
      if (!chosen.has(c.name)) order.push(c.name);
      if (!chosen.has(c.name) || rank < chosen.get(c.name).rank) chosen.set(c.name, { rank, c });
    }
  }
  const all = order.map((n) => chosen.get(n).c);
  const required = all.filter((c) => c.classname === 'readiness.required');
  const failures = required.filter((c) => c.status !== 'pass').length;
  const skipped = all.filter((c) => c.classname !== 'readiness.required' && c.status !== 'pass').length;
  const verdict = required.some((c) => c.status === 'fail') ? 'not_ready' : failures ? 'incomplete' : 'ready';
  const suite = attributes((/<testsuite\b([^>]*)>/.exec(reports[0]) || ['', ''])[1]);
  const root = attributes((/<testsuites\b([^>]*)>/.exec(reports[0]) || ['', ''])[1]);
  const properties = [
    `<property name="verdict" value="${verdict}"/>`,
    `<property name="workers" value="${reports.length}"/>`,
    ...Object.entries(workers).map(([id, requests]) => `<property name="worker.${escape(id)}" value="${escape(requests)}"/>`),
  ];
  const counts = `tests="${all.length}" failures="${failures}" skipped="${skipped}"`;
  return [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="${escape(root.name || 'signage readiness')}" ${counts}>`,
    `  <testsuite name="${escape(suite.name || 'readiness')}" ${counts} timestamp="${escape(suite.timestamp || '')}">`,
    `    <properties>${properties.join('')}</properties>`,
    ...all.map((c) => `    ${c.xml}`),
    '  </testsuite>',
    '</testsuites>',
    '',
  ].join('\n');
}

module.exports = { combineReadiness, readinessCases: cases };
