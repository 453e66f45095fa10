// Internal to the protocol: the cache maintenance messages (gc with its bounds, pins), parsed
// and written in maintenance_messages.cpp.
#pragma once

#include "json_fields.hpp"
#include "kernelhub/proto/messages.hpp"

namespace kernelhub::proto::detail {

Result<Message> parse_gc_request(const Fields& f);
Result<Message> parse_gc_reply(const Fields& f);
Result<Message> parse_pin_request(const Fields& f);
Result<Message> parse_pin_reply(const Fields& f);

}  // namespace kernelhub::proto::detail
