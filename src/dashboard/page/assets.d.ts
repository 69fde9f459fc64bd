// Style imports are bundled by esbuild; to the type checker they are side effects only.
declare module '*.css';
