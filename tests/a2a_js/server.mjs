// An A2A 1.0 echo agent served by the official JavaScript SDK (@a2a-js/sdk 1.3.0), for the kit's
// tests: the SDK's own DefaultRequestHandler, InMemoryTaskStore and transports (JSON-RPC and
// HTTP+JSON through its Express handlers, gRPC through its grpcService) with a small agent on
// loopback, as tests/a2a_sdk_server.py serves the Python SDK's. Streaming is declared on; push
// notifications and the extended card off.
//
//     node tests/a2a_js/server.mjs --port N [--grpc-port M] [--host 127.0.0.1]
//
// Routes: GET /.well-known/agent-card.json (the SDK's card handler), POST /jsonrpc, /rest/...;
// gRPC A2AService at host:M. The agent's outcome is chosen by how the message text starts, so
// the kit's scenarios: drive each path: "input-required", "fail", "slow" (working for a few
// seconds, long enough to be canceled), "message" (a direct Message); anything else is echoed
// back as the one artifact of a completed task. It prints "listening on http://host:port" once
// both servers are bound (tests/a2a_sdk.py waits for it).

import { randomUUID } from "node:crypto";
import { parseArgs } from "node:util";

import express from "express";
import * as grpc from "@grpc/grpc-js";
import { AgentCard, Role, TaskState } from "@a2a-js/sdk";
import { AgentEvent, DefaultRequestHandler, InMemoryTaskStore } from "@a2a-js/sdk/server";
import { UserBuilder, agentCardHandler, jsonRpcHandler, restHandler } from "@a2a-js/sdk/server/express";
import { A2AService, grpcService } from "@a2a-js/sdk/server/grpc";

const SLOW_MS = 2000;
const { values } = parseArgs({
  options: { port: { type: "string" }, "grpc-port": { type: "string" }, host: { type: "string", default: "127.0.0.1" } },
});
const host = values.host;
const port = Number(values.port);
const grpcPort = Number(values["grpc-port"] || port + 1);
const base = `http://${host}:${port}`;

const card = AgentCard.fromJSON({
  name: "a2a-js echo",
  description: "Echo agent served by the official A2A JavaScript SDK (@a2a-js/sdk) for conformance tests.",
  version: "1.0.0",
  supportedInterfaces: [
    { url: `${base}/jsonrpc`, protocolBinding: "JSONRPC", protocolVersion: "1.0" },
    { url: `${base}/rest`, protocolBinding: "HTTP+JSON", protocolVersion: "1.0" },
    { url: `${host}:${grpcPort}`, protocolBinding: "GRPC", protocolVersion: "1.0" },
  ],
  capabilities: { streaming: true, pushNotifications: false, extendedAgentCard: false },
  defaultInputModes: ["text/plain"],
  defaultOutputModes: ["text/plain"],
  skills: [{
    id: "echo", name: "Echo", tags: ["echo", "test"],
    description: "Echoes the text; a leading input-required, fail, slow or message picks another outcome.",
    examples: ["hello", "input-required", "fail", "slow", "message"],
  }],
});

const text = (message) => (message?.parts ?? [])
  .map((p) => (p.content?.$case === "text" ? p.content.value : ""))
  .join(" ");
const now = () => new Date().toISOString();  // TaskStatus.timestamp is an ISO 8601 string in the SDK's types
const agentMessage = (said, taskId, contextId) => ({
  messageId: randomUUID(), contextId, taskId, role: Role.ROLE_AGENT,
  parts: [{ content: { $case: "text", value: said }, metadata: undefined, filename: "", mediaType: "" }],
  metadata: undefined, extensions: [], referenceTaskIds: [],
});
const status = (state, taskId, contextId, said) => ({
  state, timestamp: now(), message: said ? agentMessage(said, taskId, contextId) : undefined,
});

class EchoAgent {
  canceled = new Set();

  async execute(requestContext, eventBus) {
    const { taskId, contextId, userMessage, task } = requestContext;
    const said = text(userMessage);
    if (!task && said.startsWith("message")) {
      eventBus.publish(AgentEvent.message(agentMessage(said, "", contextId)));
      eventBus.finished();
      return;
    }
    // every call publishes the Task first (the SDK's rule), a follow-up too
    eventBus.publish(AgentEvent.task({
      id: taskId, contextId, artifacts: task?.artifacts ?? [], metadata: undefined,
      history: [...(task?.history ?? []), userMessage],
      status: status(task ? TaskState.TASK_STATE_WORKING : TaskState.TASK_STATE_SUBMITTED, taskId, contextId),
    }));
    const update = (state, said, final) => eventBus.publish(AgentEvent.statusUpdate({
      taskId, contextId, status: status(state, taskId, contextId, said), metadata: undefined, final,
    }));
    update(TaskState.TASK_STATE_WORKING);
    if (said.startsWith("input-required")) {
      update(TaskState.TASK_STATE_INPUT_REQUIRED, "more input, please", true);
    } else if (said.startsWith("fail")) {
      update(TaskState.TASK_STATE_FAILED, "failed as asked", true);
    } else {
      if (said.startsWith("slow")) await new Promise((done) => setTimeout(done, SLOW_MS));
      if (this.canceled.has(taskId)) {
        eventBus.finished();
        return;
      }
      eventBus.publish(AgentEvent.artifactUpdate({
        taskId, contextId, append: false, lastChunk: true, metadata: undefined,
        artifact: {
          artifactId: randomUUID(), name: "echo", description: "", metadata: undefined, extensions: [],
          parts: [{ content: { $case: "text", value: said }, metadata: undefined, filename: "", mediaType: "" }],
        },
      }));
      update(TaskState.TASK_STATE_COMPLETED, undefined, true);
    }
    eventBus.finished();
  }

  async cancelTask(taskId, eventBus) {
    this.canceled.add(taskId);
    eventBus.publish(AgentEvent.statusUpdate({
      taskId, contextId: "", status: status(TaskState.TASK_STATE_CANCELED, taskId, ""), metadata: undefined,
    }));
    eventBus.finished();
  }
}

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new EchoAgent());
const app = express();
app.use("/.well-known/agent-card.json", agentCardHandler({ agentCardProvider: handler }));
app.use("/jsonrpc", jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
app.use("/rest", restHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));

const rpc = new grpc.Server();
rpc.addService(A2AService, grpcService({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
rpc.bindAsync(`${host}:${grpcPort}`, grpc.ServerCredentials.createInsecure(), (error) => {
  if (error) {
    console.error(`gRPC server not bound: ${error}`);
    process.exit(1);
  }
  const http = app.listen(port, host, () => console.log(`listening on ${base}`));
  const stop = () => {
    http.close();
    rpc.forceShutdown();
    process.exit(0);
  };
  process.on("SIGTERM", stop);
  process.on("SIGINT", stop);
});
