// mlaops::OpPlan (include/mlaops/plan.h), CallSignature (core/signature.h), MLAOPS_VERBOSE.
#include "core/plan_state.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "mlaops/plan.h"

namespace mlaops {

OpPlan::OpPlan() noexcept = default;
OpPlan::OpPlan(std::unique_ptr<detail::PlanState> state) noexcept : state_(std::move(state)) {}
OpPlan::~OpPlan() = default;
OpPlan::OpPlan(OpPlan&&) noexcept = default;
OpPlan& OpPlan::operator=(OpPlan&&) noexcept = default;

const char* OpPlan::op() const noexcept { return state_ ? state_->op : ""; }
uint64_t OpPlan::workspace_size() const noexcept { return state_ ? state_->workspace_bytes : 0; }
std::string OpPlan::explain() const { return state_ ? state_->explain() : std::string("(no plan)\n"); }

void CallSignature::add(const char* name, double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  add(name, bits);
}

void CallSignature::add(const char* name, const std::string& s) {
  add(name, static_cast<int64_t>(s.size()));
  for (unsigned char c : s) add(name, static_cast<int64_t>(c));
}

void CallSignature::add(const char* name, const TensorView* t) {
  if (t == nullptr) {
    add(name, int64_t{-1});
    return;
  }
  add(name, static_cast<int64_t>(t->dtype));
  add(name, static_cast<int64_t>(t->format));
  add(name, static_cast<int64_t>(t->rank));
  for (int i = 0; i < t->rank; ++i) add(name, t->dims[i]);
  for (int i = 0; i < t->rank; ++i) add(name, t->strides[i]);
}

void CallSignature::add(const char* name, const std::vector<int64_t>* a) {
  if (a == nullptr) {
    add(name, int64_t{-1});
    return;
  }
  add(name, static_cast<int64_t>(a->size()));
  for (int64_t v : *a) add(name, v);
}

bool CallSignature::matches(const CallSignature& o, std::string* diff) const {
  const size_t n = std::min(fields_.size(), o.fields_.size());
  for (size_t i = 0; i < n; ++i) {
    if (fields_[i].value == o.fields_[i].value && std::strcmp(fields_[i].name, o.fields_[i].name) == 0) continue;
    if (diff != nullptr) {
      char buf[256];
      std::snprintf(buf, sizeof(buf), "%s differs from the planned call (planned %lld, got %lld)", o.fields_[i].name,
                    static_cast<long long>(fields_[i].value), static_cast<long long>(o.fields_[i].value));
      *diff = buf;
    }
    return false;
  }
  if (fields_.size() != o.fields_.size()) {
    if (diff != nullptr) *diff = "the call's optional inputs differ from the planned call";
    return false;
  }
  return true;
}

bool verbose_enabled() {
  static const bool on = [] {
    const char* e = std::getenv("MLAOPS_VERBOSE");
    return e != nullptr && *e != '\0' && std::strcmp(e, "0") != 0;
  }();
  return on;
}

void verbose_plan(const detail::PlanState& plan) {
  if (!verbose_enabled()) return;
  const std::string s = plan.explain();
  std::fprintf(stderr, "mlaops plan: %s\n%s", plan.op, s.c_str());
}

}  // namespace mlaops
