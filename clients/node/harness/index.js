'use strict';
// signage-sandbox/harness: the pieces every runner integration is made of, for a harness of
// your own or a runner this package does not cover.
const { Client, SignageError } = require('./http.js');
const { Operator } = require('./operator.js');
const { WebhookReceiver } = require('./receiver.js');
const { verifyWebhook, WebhookVerificationError } = require('./verify.js');
const { SignageServer, SignageStartError, loadCredentials, DEFAULT_CLOCK, DEFAULT_SEED } = require('./server.js');
const { combineReadiness, readinessCases } = require('./combine.js');
const { startBroker, BROKER_ENV, CLEAN_SNAPSHOT } = require('./broker.js');
const { Sandbox } = require('./sandbox.js');
const { TEST_NAME_HEADER } = require('./scope.js');

module.exports = {
  Client,
  SignageError,
  Operator,
  WebhookReceiver,
  verifyWebhook,
  WebhookVerificationError,
  SignageServer,
  SignageStartError,
  loadCredentials,
  combineReadiness,
  readinessCases,
  startBroker,
  Sandbox,
  TEST_NAME_HEADER,
  BROKER_ENV,
  CLEAN_SNAPSHOT,
  DEFAULT_CLOCK,
  DEFAULT_SEED,
};
