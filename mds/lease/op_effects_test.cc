// The lease table against MdsRequest itself: every case of the `op` oneof,
// found through the protobuf descriptor, has a row, and each row is
// consistent; then a few rows' effects on sample requests.
#include "mds/lease/op_effects.h"

#include <cerrno>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include <google/protobuf/descriptor.h>

namespace sfs::mds {
namespace {

using proto::MdsRequest;
using proto::MdsResponse;

const google::protobuf::OneofDescriptor* OpOneof() {
  return MdsRequest::descriptor()->FindOneofByName("op");
}

// A request whose op is the oneof's field f, with every field at its default.
MdsRequest WithOp(const google::protobuf::FieldDescriptor* f) {
  MdsRequest r;
  r.GetReflection()->MutableMessage(&r, f);
  return r;
}

std::vector<uint64_t> Inos(const std::vector<LeaseInval>& items) {
  std::vector<uint64_t> out;
  for (const LeaseInval& i : items) out.push_back(i.ino);
  return out;
}

TEST(OpEffectsTest, EveryOpOfMdsRequestHasARow) {
  const google::protobuf::OneofDescriptor* op = OpOneof();
  ASSERT_NE(op, nullptr);
  ASSERT_GT(op->field_count(), 30);
  for (int i = 0; i < op->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = op->field(i);
    // A oneof's case value is its field's number.
    ASSERT_EQ(WithOp(f).op_case(), f->number()) << f->name();
    EXPECT_NE(FindOpEffects(static_cast<MdsRequest::OpCase>(f->number())), nullptr)
        << "MdsRequest op '" << f->name() << "' has no row in mds/lease/op_effects.cc: "
        << "say which names, directory and inodes it changes, or why it changes nothing "
        << "another mount caches";
  }
  EXPECT_EQ(FindOpEffects(MdsRequest::OP_NOT_SET), nullptr);
}

TEST(OpEffectsTest, AMutatingOpNamesWhatItChangesOrSaysWhyNothing) {
  const google::protobuf::OneofDescriptor* op = OpOneof();
  for (int i = 0; i < op->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = op->field(i);
    const OpEffects* e = FindOpEffects(static_cast<MdsRequest::OpCase>(f->number()));
    if (e == nullptr) continue;  // reported above
    const bool changes = e->names != nullptr || e->inodes != nullptr;
    if (!e->mutating) {
      EXPECT_FALSE(changes || e->unbinds || e->names_changed) << f->name() << " is read-only";
      EXPECT_EQ(e->neutral, nullptr) << f->name() << ": a read needs no reason";
      continue;
    }
    EXPECT_NE(changes, e->neutral != nullptr)
        << f->name() << ": a mutating op changes names or inodes, or says why it changes "
        << "nothing leased, not both";
    if (e->unbinds || e->names_changed) {
      EXPECT_NE(e->names, nullptr) << f->name() << ": unbinds or changes names it lacks";
    }
  }
}

// Commit before reply: every mutation's reply waits for its commit, but for
// the few that record only what fsync promises; a read never says it is exempt.
TEST(OpEffectsTest, OnlySizeReportsAndOpensAreAckedBeforeTheirCommit) {
  const google::protobuf::OneofDescriptor* op = OpOneof();
  std::set<std::string> at_once;
  for (int i = 0; i < op->field_count(); ++i) {
    const google::protobuf::FieldDescriptor* f = op->field(i);
    const OpEffects* e = FindOpEffects(static_cast<MdsRequest::OpCase>(f->number()));
    if (e == nullptr) continue;
    if (e->acked_at_once_if != nullptr) EXPECT_NE(e->acked_at_once, nullptr) << f->name();
    if (e->acked_at_once == nullptr) continue;
    EXPECT_TRUE(e->mutating) << f->name() << ": a read has no commit to skip";
    at_once.insert(f->name());
  }
  EXPECT_EQ(at_once, (std::set<std::string>{"append", "close", "create", "open", "open_path",
                                            "set_size"}));
  MdsRequest create;
  create.mutable_create()->set_parent(1);
  MdsResponse made, opened;
  made.mutable_open()->set_created(true);
  opened.mutable_open()->set_created(false);
  EXPECT_TRUE(AckWaitsForCommit(create, made)) << "a new name waits for its commit";
  EXPECT_FALSE(AckWaitsForCommit(create, opened)) << "opening an existing file does not";
  MdsRequest unlink, close;
  unlink.mutable_unlink()->set_parent(1);
  close.mutable_close()->set_ino(5);
  EXPECT_TRUE(AckWaitsForCommit(unlink, MdsResponse{}));
  EXPECT_FALSE(AckWaitsForCommit(close, MdsResponse{}));
  EXPECT_TRUE(AckWaitsForCommit(MdsRequest{}, MdsResponse{})) << "an op not in the table waits";
}

TEST(OpEffectsTest, AReadChangesNothingAndALookupLeasesItsDirectory) {
  const google::protobuf::OneofDescriptor* op = OpOneof();
  for (int i = 0; i < op->field_count(); ++i) {
    const MdsRequest r = WithOp(op->field(i));
    const OpEffects* e = FindOpEffects(r.op_case());
    if (e == nullptr || e->mutating) continue;
    EXPECT_TRUE(NamesOf(r).empty()) << op->field(i)->name();
    EXPECT_TRUE(InodesChanged(r).empty()) << op->field(i)->name();
  }
  MdsRequest lookup;
  lookup.mutable_lookup()->set_parent(5);
  lookup.mutable_lookup()->set_name("a");
  EXPECT_EQ(DirOf(lookup), 5u);
  MdsRequest readdir;
  readdir.mutable_readdir()->set_ino(9);
  EXPECT_EQ(DirOf(readdir), 9u);
  MdsRequest getattr;
  getattr.mutable_getattr()->set_ino(9);
  EXPECT_EQ(DirOf(getattr), 0u);
}

TEST(OpEffectsTest, ACreateChangesItsNameOnlyIfItMadeTheFile) {
  MdsRequest r;
  r.mutable_create()->set_parent(3);
  r.mutable_create()->set_name("f");
  ASSERT_EQ(NamesOf(r).size(), 1u);
  EXPECT_EQ(NamesOf(r)[0], NameRef(3, "f"));
  EXPECT_TRUE(NamesUnbound(r).empty()) << "a create removes no name";
  EXPECT_EQ(DirOf(r), 3u);
  MdsResponse made;
  made.mutable_open()->set_created(true);
  std::vector<LeaseInval> changed = DirsChanged(r, made);
  ASSERT_EQ(changed.size(), 1u);
  EXPECT_EQ(changed[0].ino, 3u);
  EXPECT_EQ(changed[0].parent, 3u);
  EXPECT_EQ(changed[0].name, "f");
  MdsResponse opened;
  opened.mutable_open()->set_created(false);
  EXPECT_TRUE(DirsChanged(r, opened).empty());
}

TEST(OpEffectsTest, AFilesFirstWriteOpenRevokesItsLeasesAndNoOtherOpenDoes) {
  MdsRequest open, open_path, create;
  open.mutable_open()->set_ino(7);
  open_path.mutable_open_path()->set_parent(1);
  create.mutable_create()->set_parent(1);
  MdsResponse first, later;
  first.mutable_open()->mutable_attr()->set_ino(7);
  first.mutable_open()->set_first_write_open(true);
  later.mutable_open()->mutable_attr()->set_ino(7);
  later.mutable_open()->set_write_opens(true);
  for (const MdsRequest* r : {&open, &open_path, &create}) {
    EXPECT_EQ(Inos(InodesChangedByReply(*r, first)), std::vector<uint64_t>{7}) << r->op_case();
    EXPECT_TRUE(InodesChangedByReply(*r, later).empty()) << r->op_case();
    EXPECT_TRUE(InodesChanged(*r).empty()) << "nothing before the reply says so";
  }
  MdsRequest unlink;
  unlink.mutable_unlink()->set_parent(1);
  EXPECT_TRUE(InodesChangedByReply(unlink, first).empty()) << "only an open's reply counts";
}

TEST(OpEffectsTest, ARenameUnbindsBothNamesAndLeasesOnlyASingleDirectory) {
  MdsRequest r;
  r.mutable_rename()->set_parent(3);
  r.mutable_rename()->set_name("a");
  r.mutable_rename()->set_new_parent(3);
  r.mutable_rename()->set_new_name("b");
  std::vector<NameRef> want = {{3, "a"}, {3, "b"}};
  EXPECT_EQ(NamesOf(r), want);
  EXPECT_EQ(NamesUnbound(r), want) << "the moved file and the one it replaces";
  EXPECT_EQ(DirOf(r), 3u);
  EXPECT_EQ(DirsChanged(r, MdsResponse()).size(), 2u);
  r.mutable_rename()->set_new_parent(4);
  EXPECT_EQ(DirOf(r), 0u) << "a reply carries one parent lease";
}

TEST(OpEffectsTest, ALinkChangesItsNewNameAndTheLinkedInode) {
  MdsRequest r;
  r.mutable_link()->set_ino(7);
  r.mutable_link()->set_new_parent(3);
  r.mutable_link()->set_new_name("h");
  EXPECT_EQ(NamesOf(r), std::vector<NameRef>({{3, "h"}}));
  EXPECT_TRUE(NamesUnbound(r).empty());
  EXPECT_EQ(Inos(InodesChanged(r)), std::vector<uint64_t>{7});
}

TEST(OpEffectsTest, ACloseChangesTheInodeOnlyWhenItReportsSomething) {
  MdsRequest r;
  r.mutable_close()->set_ino(7);
  EXPECT_TRUE(InodesChanged(r).empty()) << "a plain close only releases the open";
  r.mutable_close()->set_has_size(true);
  EXPECT_EQ(Inos(InodesChanged(r)), std::vector<uint64_t>{7});
  r.mutable_close()->set_has_size(false);
  r.mutable_close()->set_mtime_ns(1);
  EXPECT_EQ(Inos(InodesChanged(r)), std::vector<uint64_t>{7});
}

TEST(OpEffectsTest, AnAbortedMigrationChangesNothing) {
  MdsRequest r;
  r.mutable_migrate_commit()->set_ino(7);
  EXPECT_EQ(Inos(InodesChanged(r)), std::vector<uint64_t>{7});
  r.mutable_migrate_commit()->set_abort(true);
  EXPECT_TRUE(InodesChanged(r).empty());
}

TEST(OpEffectsTest, AnOpenMutatesButRevokesNothing) {
  const OpEffects* e = FindOpEffects(MdsRequest::kOpen);
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->mutating);
  EXPECT_NE(e->neutral, nullptr);
  MdsRequest r;
  r.mutable_open()->set_ino(7);
  EXPECT_TRUE(NamesOf(r).empty());
  EXPECT_TRUE(InodesChanged(r).empty());
  EXPECT_EQ(DirOf(r), 0u);
}

TEST(OpEffectsTest, AnOpenByPathMutatesButRevokesNothingAndLeasesNoDirectory) {
  const OpEffects* e = FindOpEffects(MdsRequest::kOpenPath);
  ASSERT_NE(e, nullptr);
  EXPECT_TRUE(e->mutating);
  EXPECT_NE(e->neutral, nullptr);
  MdsRequest r;
  r.mutable_open_path()->set_parent(1);
  r.mutable_open_path()->add_names("a");
  r.mutable_open_path()->add_names("b");
  EXPECT_TRUE(NamesOf(r).empty()) << "it binds no name, so it locks no name stripe";
  EXPECT_TRUE(InodesChanged(r).empty());
  EXPECT_EQ(DirOf(r), 0u) << "the directory it ends in is not known from the request";
  EXPECT_FALSE(AckWaitsForCommit(r, MdsResponse{}));
}

TEST(OpEffectsTest, ARequestWithNoOpChangesNothing) {
  MdsRequest r;
  EXPECT_TRUE(NamesOf(r).empty());
  EXPECT_EQ(DirOf(r), 0u);
  EXPECT_TRUE(DirsChanged(r, MdsResponse()).empty());
  EXPECT_TRUE(InodesChanged(r).empty());
}

// libsfs ends its kept opens after a request of its own exactly when the MDS
// would revoke other mounts' leases for it (client/lib/mds_client.cc).
TEST(OpEffectsTest, ChangesLeasedIsWhatTheMdsRevokesFor) {
  const google::protobuf::OneofDescriptor* op = OpOneof();
  for (int i = 0; i < op->field_count(); ++i) {
    const MdsRequest r = WithOp(op->field(i));
    for (bool first_write : {false, true}) {
      MdsResponse ok;
      ok.mutable_open()->set_first_write_open(first_write);
      const bool revokes = !DirsChanged(r, ok).empty() || !InodesChanged(r).empty() ||
                           !InodesChangedByReply(r, ok).empty();
      EXPECT_EQ(mdsop::ChangesLeased(r, &ok), revokes) << op->field(i)->name();
      MdsResponse refused = ok;
      refused.mutable_status()->set_code(EEXIST);
      EXPECT_FALSE(mdsop::ChangesLeased(r, &refused)) << op->field(i)->name();
    }
  }
}

TEST(OpEffectsTest, WithNoReplyEveryOpThatMayChangeSomethingCounts) {
  MdsRequest mkdir;
  mkdir.mutable_mkdir()->set_parent(1);
  mkdir.mutable_mkdir()->set_name("d");
  EXPECT_TRUE(mdsop::ChangesLeased(mkdir, nullptr));
  MdsRequest open;
  open.mutable_open()->set_ino(7);
  EXPECT_TRUE(mdsop::ChangesLeased(open, nullptr)) << "it may have been a first write open";
  EXPECT_FALSE(mdsop::ChangesLeased(open, &MdsResponse::default_instance()));
  MdsRequest close;
  close.mutable_close()->set_ino(7);
  EXPECT_FALSE(mdsop::ChangesLeased(close, nullptr)) << "a bare close reports nothing";
  close.mutable_close()->set_has_size(true);
  close.mutable_close()->set_size_hint(10);
  EXPECT_TRUE(mdsop::ChangesLeased(close, nullptr));
  MdsRequest lookup;
  lookup.mutable_lookup()->set_parent(1);
  EXPECT_FALSE(mdsop::ChangesLeased(lookup, nullptr));
}

}  // namespace
}  // namespace sfs::mds
