import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tap/', 'coverage/', 'src/generated/', 'test-output/', 'bench/out/',
    // Compiled against code generated at test time (test/clients/outside-client.test.ts, oazapfts-client.test.ts).
    'test/clients/outside-client/', 'test/clients/oazapfts-client/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'no-console': ['error', { allow: ['error', 'warn'] }]
    }
  },
  {
    files: ['src/cli/**', 'scripts/**', 'bench/**', 'test/**'],
    rules: { 'no-console': 'off' }
  },
  {
    // The contract's code (src/contract/) is what the rest of the service builds on: its arrows
    // point only inward. It may import its own files, packages and the types generated from
    // openapi.yaml, nothing else of the project (docs/architecture.md, "The contract's code").
    files: ['src/contract/**'],
    rules: {
      'no-restricted-imports': ['error', {
        patterns: [{
          regex: '^\\.\\./(?!generated/)',
          message: 'src/contract/ imports nothing from the rest of the project but src/generated/: move the code that needs it out of src/contract/, or what it needs in.'
        }]
      }]
    }
  }
)
