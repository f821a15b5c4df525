// The Runbook extension: starts `rbc lsp` for .rbk files, and for the
// YAML files of the verb catalogue so that their V-codes show as they are
// edited. Everything else is the language server's.
'use strict';

const vscode = require('vscode');
const { LanguageClient } = require('vscode-languageclient/node');

let client;

function activate(context) {
  const config = vscode.workspace.getConfiguration('runbook');
  const args = ['lsp'];
  for (const dir of config.get('verbs', [])) {
    args.push('--verbs', dir);
  }
  const server = { command: config.get('rbcPath', 'rbc'), args };
  client = new LanguageClient('runbook', 'Runbook (rbc lsp)', { run: server, debug: server }, {
    documentSelector: [
      { scheme: 'file', language: 'runbook' },
      { scheme: 'untitled', language: 'runbook' },
      // The server checks only the YAML files under the catalogue's paths.
      { scheme: 'file', language: 'yaml' },
    ],
    // Verb files and runbook.yaml changed on disk (a checkout, another
    // program) reload the catalogue.
    synchronize: {
      fileEvents: vscode.workspace.createFileSystemWatcher('**/*.{yaml,yml}'),
    },
  });
  context.subscriptions.push(client);
  return client.start();
}

function deactivate() {
  return client ? client.stop() : undefined;
}

module.exports = { activate, deactivate };
