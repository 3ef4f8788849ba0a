/* ctlreply — how the gateway's answer to a worker's call_tool starts, one contract for its
 * writer and its readers: src/run/calls.c writes CTL_REPLY_HEAD, the call id as JSON,
 * CTL_REPLY_MID, the result's bytes and "}" (the frame rpc_result gives); in the worker,
 * inbox.c classifies a long answer from that head alone, and pyfast.c reads the usual
 * one-text-block result from its bytes. A change to one side that the others do not follow
 * sends every answer down the slow paths. */
#ifndef CODEMCP_CTLREPLY_H
#define CODEMCP_CTLREPLY_H

#define CTL_REPLY_HEAD "{\"jsonrpc\":\"2.0\",\"id\":"
#define CTL_REPLY_MID  ",\"result\":"

#endif
