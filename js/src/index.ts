// amfkit's AMF codec for browsers: AMF0 and AMF3 values, the remoting packet and Flex
// messages. No dependencies; one ES module (python/amfkit/browser/static/amfkit-codec.js).
//
//   import { amf3, packet, RemotingMessage } from "./amfkit-codec.js";
//   const bytes = amf3.encode({ a: [1, 2.5, "x"] });
//   amf3.decode(bytes);  // { a: [1, 2.5, "x"] }

export * as amf0 from "./amf0";
export * as amf3 from "./amf3";
export * as packet from "./packet";

export type { Body, DecodedBody, DecodedHeader, DecodedPacket, Header, Packet } from "./packet";
export type { DecodeOptions, DecodeValueOptions, Limits } from "./limits";
export type { EncodeOptions } from "./writer";
export type { ClassOptions, DataInput, DataOutput } from "./registry";

export { AMFError, DecodeError, EncodeError } from "./errors";
export { DEFAULT_LIMITS, DEFAULT_ENCODE_MAX_DEPTH, DEPTH_CEILING } from "./limits";
export { registerClassAlias, unregisterClassAlias, registeredClasses, classAliasOf } from "./registry";
export {
  AmfDate,
  ArrayCollection,
  ArrayList,
  Avmplus,
  Dictionary,
  Double,
  IntVector,
  MixedArray,
  NumberVector,
  ObjectProxy,
  ObjectVector,
  TRAITS,
  Traits,
  TypedObject,
  UintVector,
  UNSUPPORTED,
  Unsupported,
  Xml,
  XmlDocument,
} from "./types";
export {
  AbstractMessage,
  AcknowledgeMessage,
  AsyncMessage,
  CommandMessage,
  ErrorMessage,
  Operation,
  RemotingMessage,
  newId,
  requestBody,
} from "./flex";
