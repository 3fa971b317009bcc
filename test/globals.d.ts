// Tests read many JSON bodies and assert on their shape; typing each one adds nothing the assertions don't check.
declare global {
  interface Response { json(): Promise<any> }
}
export {}
