// RAII owners for libcurl handles: an easy handle, a multi handle, a header list, and
// the process-wide curl_global_init.
#pragma once

#include <curl/curl.h>

#include <memory>
#include <string>

namespace kernelhub::hub {

// curl_global_init is not thread-safe; call this once before the first handle (every
// constructor below does).
void ensure_curl_global_init();

struct CurlEasyDeleter {
  void operator()(CURL* handle) const noexcept { curl_easy_cleanup(handle); }
};
struct CurlMultiDeleter {
  void operator()(CURLM* handle) const noexcept { curl_multi_cleanup(handle); }
};

class CurlEasy {
 public:
  CurlEasy();
  CURL* get() const { return handle_.get(); }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  std::unique_ptr<CURL, CurlEasyDeleter> handle_;
};

class CurlMulti {
 public:
  CurlMulti();
  CURLM* get() const { return handle_.get(); }
  explicit operator bool() const { return handle_ != nullptr; }

 private:
  std::unique_ptr<CURLM, CurlMultiDeleter> handle_;
};

class CurlSlist {
 public:
  CurlSlist() = default;
  CurlSlist(CurlSlist&& other) noexcept : list_(other.list_) { other.list_ = nullptr; }
  CurlSlist& operator=(CurlSlist&& other) noexcept;
  CurlSlist(const CurlSlist&) = delete;
  CurlSlist& operator=(const CurlSlist&) = delete;
  ~CurlSlist() { curl_slist_free_all(list_); }

  // Returns false when curl could not allocate the entry.
  bool append(const std::string& line);
  curl_slist* get() const { return list_; }

 private:
  curl_slist* list_ = nullptr;
};

// Keeps an easy handle attached to a multi handle for its lifetime.
class MultiAttachment {
 public:
  MultiAttachment(CURLM* multi, CURL* easy);
  MultiAttachment(const MultiAttachment&) = delete;
  MultiAttachment& operator=(const MultiAttachment&) = delete;
  ~MultiAttachment();
  bool ok() const { return ok_; }

 private:
  CURLM* multi_;
  CURL* easy_;
  bool ok_;
};

}  // namespace kernelhub::hub
