#include "curl_handles.hpp"

#include <mutex>

namespace kernelhub::hub {

void ensure_curl_global_init() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

CurlEasy::CurlEasy() {
  ensure_curl_global_init();
  handle_.reset(curl_easy_init());
}

CurlMulti::CurlMulti() {
  ensure_curl_global_init();
  handle_.reset(curl_multi_init());
}

CurlSlist& CurlSlist::operator=(CurlSlist&& other) noexcept {
  if (this != &other) {
    curl_slist_free_all(list_);
    list_ = other.list_;
    other.list_ = nullptr;
  }
  return *this;
}

bool CurlSlist::append(const std::string& line) {
  curl_slist* next = curl_slist_append(list_, line.c_str());
  if (next == nullptr) return false;
  list_ = next;
  return true;
}

MultiAttachment::MultiAttachment(CURLM* multi, CURL* easy)
    : multi_(multi), easy_(easy), ok_(curl_multi_add_handle(multi, easy) == CURLM_OK) {}

MultiAttachment::~MultiAttachment() {
  if (ok_) curl_multi_remove_handle(multi_, easy_);
}

}  // namespace kernelhub::hub
