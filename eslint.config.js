import js from '@eslint/js'
import tseslint from 'typescript-eslint'

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', '.tap/', 'coverage/', 'src/generated/', 'test-output/', 'bench/out/',
    // Compiled against types generated at test time (test/clients/outside-client.test.ts).
    'test/clients/outside-client/'] },
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
  }
)
