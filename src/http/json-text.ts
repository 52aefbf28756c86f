/**
 * A success body that is already JSON text (the database built it, without a JavaScript object
 * per row). The response serializer validates it against the operation's schema in openapi.yaml
 * like any other body — by parsing the very text that is sent — and then sends the text as it is.
 * `T` is the body the text stands for, so a handler can only return text of its own body type.
 */
export class JsonText<T = unknown> {
  declare readonly body?: T
  constructor (readonly text: string) {}
}
