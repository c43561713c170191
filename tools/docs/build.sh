#!/bin/sh
# `npm run docs`: the API reference in docs/api/. TypeDoc lives in this
# folder's own package (it needs a TypeScript with a JS compiler API; the root
# builds with the native TypeScript 7), installed here from its lockfile when
# missing or when the lockfile changed since the last install.
set -eu
cd "$(dirname "$0")"
if ! cmp -s package-lock.json node_modules/.installed-lock 2>/dev/null; then
  npm ci --ignore-scripts --no-audit --no-fund
  cp package-lock.json node_modules/.installed-lock
fi
exec node_modules/.bin/typedoc --options typedoc.config.mjs
